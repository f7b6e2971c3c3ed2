package warden

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/warden-run/warden/tool"
)

// FakeHost is a HostFuncs for unit tests of a tool on the host (go test,
// no wasm and no warden): pass it to NewContext and call the tool's Call.
// It keeps what the tool logs and reports, serves warden.fs read and write
// from Files, warden.memory get, set and append from Memory and warden.env
// get from Env, and sends every other request to Handle. A request it cannot
// serve (no Handle, or a file, topic or key it does not hold) gets the
// error a real host would give: "not_found" for a missing file or topic,
// "denied" for the rest. It grants everything it holds: the grants
// themselves are warden's, tested with warden call against a config.
//
//	host := &warden.FakeHost{Files: map[string][]byte{"data/a.txt": []byte("a b")}}
//	res, err := myTool{}.Call(warden.NewContext("test", "", host), json.RawMessage(`{"path":"data/a.txt"}`))
type FakeHost struct {
	// Files are project files by path, as the tool names them.
	Files map[string][]byte
	// Memory holds memory topics' values by topic.
	Memory map[string]string
	// Env holds the configuration values the tool may read, by key.
	Env map[string]string
	// Handle answers every other capability request with the raw reply
	// ({"result": ...} or {"error": {"kind", "message"}}); nil denies them.
	Handle func(capability string, request []byte) []byte

	mu       sync.Mutex
	logs     []string
	progress []tool.Progress
}

// Logs returns the lines the tool logged, each as "level: message".
func (h *FakeHost) Logs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.logs...)
}

// Reports returns the progress the tool reported, in order.
func (h *FakeHost) Reports() []tool.Progress {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]tool.Progress(nil), h.progress...)
}

// Log implements HostFuncs.
func (h *FakeHost) Log(level Level, message string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, fmt.Sprintf("%s: %s", level, message))
}

// Progress implements HostFuncs.
func (h *FakeHost) Progress(p tool.Progress) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.progress = append(h.progress, p)
}

// Capability implements HostFuncs.
func (h *FakeHost) Capability(name string, request []byte) []byte {
	var req struct {
		Op, Path, Content, Encoding, Topic, Value, Key string
	}
	if err := json.Unmarshal(request, &req); err != nil {
		return encodeReplyError(tool.Errorf(tool.KindInvalidArguments, "%s: %v", name, err))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case name == "fs" && req.Op == "read" && h.Files != nil:
		data, ok := h.Files[req.Path]
		if !ok {
			return encodeReplyError(tool.Errorf(tool.KindNotFound, "read %q: no such file", req.Path))
		}
		reply := map[string]any{"path": req.Path, "content": string(data), "size": len(data)}
		if !utf8.Valid(data) {
			reply["content"], reply["encoding"] = base64.StdEncoding.EncodeToString(data), "base64"
		}
		return encodeReply(reply)
	case name == "fs" && req.Op == "write" && h.Files != nil:
		data := []byte(req.Content)
		if req.Encoding == "base64" {
			var err error
			if data, err = base64.StdEncoding.DecodeString(req.Content); err != nil {
				return encodeReplyError(tool.Errorf(tool.KindInvalidArguments, "write %q: %v", req.Path, err))
			}
		}
		h.Files[req.Path] = data
		return encodeReply(map[string]any{"path": req.Path, "bytes": len(data)})
	case name == "memory" && req.Op == "get" && h.Memory != nil:
		v, ok := h.Memory[req.Topic]
		if !ok {
			return encodeReplyError(tool.Errorf(tool.KindNotFound, "memory topic %q has no value", req.Topic))
		}
		return encodeReply(map[string]any{"topic": req.Topic, "value": v})
	case name == "memory" && (req.Op == "set" || req.Op == "append") && h.Memory != nil:
		if req.Op == "append" {
			req.Value = h.Memory[req.Topic] + req.Value
		}
		h.Memory[req.Topic] = req.Value
		return encodeReply(map[string]any{"topic": req.Topic, "size": len(req.Value)})
	case name == "env" && req.Op == "get" && h.Env != nil:
		if v, ok := h.Env[req.Key]; ok {
			return encodeReply(map[string]any{"key": req.Key, "value": v})
		}
	}
	if h.Handle != nil {
		return h.Handle(name, request)
	}
	return encodeReplyError(tool.Errorf(tool.KindDenied, "the fake host does not serve %s %q", name, req.Op))
}

func encodeReply(result any) []byte {
	b, err := json.Marshal(struct {
		Result any `json:"result"`
	}{result})
	if err != nil {
		return encodeReplyError(tool.Errorf(tool.KindFailed, "encode reply: %v", err))
	}
	return b
}
