package warden

import (
	"encoding/base64"
	"unicode/utf8"

	"github.com/warden-run/warden/tool"
)

// The capability operations most tools use, as functions (the C SDK's
// wd_fs_read and friends, the AssemblyScript SDK's fsRead). Each is one
// request to Host: every other operation, and every optional field, is
// reachable through Host with the request docs/abi.md documents. A request
// the tool is not granted fails with kind "denied", whose message names the
// config key that grants it; return it unchanged and the caller sees it.

// File is a project file as ReadFile returns it.
type File struct {
	// Path is the path the host resolved, relative to the project root.
	Path string
	// Content is the file's bytes (decoded when the host sent them as base64).
	Content []byte
	// Size is the whole file's size.
	Size int64
	// Truncated reports that Content stops at the host's read limit
	// (fs.max_read); read the rest with Host and an "offset".
	Truncated bool
}

// ReadFile reads a project file (warden.fs "read"): path is relative to the
// project root, or "name:path" in the extra root name (project.roots), as
// docs/abi.md says. It needs an fs read
// grant covering path; a missing file is kind "not_found".
func ReadFile(ctx *Context, path string) (*File, error) {
	var reply struct {
		Path      string `json:"path"`
		Content   string `json:"content"`
		Encoding  string `json:"encoding"`
		Size      int64  `json:"size"`
		Truncated bool   `json:"truncated"`
	}
	if err := Host(ctx, "fs", struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	}{"read", path}, &reply); err != nil {
		return nil, err
	}
	f := &File{Path: reply.Path, Content: []byte(reply.Content), Size: reply.Size, Truncated: reply.Truncated}
	if reply.Encoding == "base64" {
		data, err := base64.StdEncoding.DecodeString(reply.Content)
		if err != nil {
			return nil, tool.Errorf(tool.KindFailed, "read %q: decode base64 content: %v", path, err)
		}
		f.Content = data
	}
	return f, nil
}

// WriteFile creates or replaces a project file with content (warden.fs
// "write"), sent as base64 when it is not UTF-8 text. It needs an fs write
// grant covering path.
func WriteFile(ctx *Context, path string, content []byte) error {
	req := struct {
		Op       string `json:"op"`
		Path     string `json:"path"`
		Content  string `json:"content"`
		Encoding string `json:"encoding,omitempty"`
	}{Op: "write", Path: path, Content: string(content)}
	if !utf8.Valid(content) {
		req.Content, req.Encoding = base64.StdEncoding.EncodeToString(content), "base64"
	}
	return Host(ctx, "fs", req, nil)
}

// MemoryGet returns a memory topic's value (warden.memory "get"); a topic
// with none is kind "not_found". It needs memory read access to the topic.
func MemoryGet(ctx *Context, topic string) (string, error) {
	var reply struct {
		Value string `json:"value"`
	}
	if err := Host(ctx, "memory", memoryRequest{Op: "get", Topic: topic}, &reply); err != nil {
		return "", err
	}
	return reply.Value, nil
}

// MemorySet replaces a memory topic's value (warden.memory "set"). It needs
// memory read-write access to the topic.
func MemorySet(ctx *Context, topic, value string) error {
	return Host(ctx, "memory", memoryRequest{Op: "set", Topic: topic, Value: value}, nil)
}

// MemoryAppend adds value at the end of a memory topic, creating it if
// missing and adding no separator (warden.memory "append"). It needs memory
// read-write access to the topic.
func MemoryAppend(ctx *Context, topic, value string) error {
	return Host(ctx, "memory", memoryRequest{Op: "append", Topic: topic, Value: value}, nil)
}

type memoryRequest struct {
	Op    string `json:"op"`
	Topic string `json:"topic"`
	Value string `json:"value,omitempty"`
}

// Env returns a configuration value the tool is granted (warden.env "get").
func Env(ctx *Context, key string) (string, error) {
	var reply struct {
		Value string `json:"value"`
	}
	if err := Host(ctx, "env", struct {
		Op  string `json:"op"`
		Key string `json:"key"`
	}{"get", key}, &reply); err != nil {
		return "", err
	}
	return reply.Value, nil
}
