package warden

import (
	"encoding/json"
	"fmt"

	"github.com/warden-run/warden/tool"
)

// Capabilities lists the warden.* capability imports Host can reach.
var capabilityNames = map[string]bool{"fs": true, "memory": true, "lsp": true, "net": true, "env": true,
	"elicit": true, "sample": true, "roots": true, "ask": true}

// Host sends request, encoded as JSON, to the warden.<capability> import and
// decodes the reply's "result" into reply (which may be nil to discard it).
// An {"error"} reply is returned as a *tool.Error with the host's kind, so a
// tool that returns it unchanged reports, say, "denied" to the caller.
// capability is one of "fs", "memory", "lsp", "net", "env"; the operations of
// each are documented with its package in hostfuncs/.
func Host(ctx *Context, capability string, request any, reply any) error {
	if !capabilityNames[capability] {
		return tool.Errorf(tool.KindFailed, "unknown host capability %q", capability)
	}
	body, err := json.Marshal(request)
	if err != nil {
		return tool.Errorf(tool.KindFailed, "encode %s request: %v", capability, err)
	}
	raw := ctx.host.Capability(capability, body)
	var envelope struct {
		Result json.RawMessage `json:"result"`
		Error  *tool.Error     `json:"error"`
	}
	if err := json.Unmarshal(raw, &envelope); err != nil {
		return tool.Errorf(tool.KindFailed, "decode %s reply: %v", capability, err)
	}
	if envelope.Error != nil {
		if envelope.Error.Kind == "" {
			envelope.Error.Kind = tool.KindFailed
		}
		return envelope.Error
	}
	if reply != nil && len(envelope.Result) > 0 {
		if err := json.Unmarshal(envelope.Result, reply); err != nil {
			return tool.Errorf(tool.KindFailed, "decode %s result: %v", capability, err)
		}
	}
	return nil
}

// encodeReplyError renders err the way a capability reply carries it.
func encodeReplyError(err *tool.Error) []byte {
	b, marshalErr := json.Marshal(struct {
		Error *tool.Error `json:"error"`
	}{err})
	if marshalErr != nil {
		// A struct of strings always encodes; keep the reply well formed anyway.
		return []byte(fmt.Sprintf(`{"error":{"kind":"failed","message":%q}}`, marshalErr.Error()))
	}
	return b
}
