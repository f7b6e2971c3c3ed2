package mcpserver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The task protocol answers 2026-07-28 tools/call requests before the
// go-sdk sees them, so it must hold them to every header rule the go-sdk
// holds the calls it answers to (SEP-2243): besides Mcp-Method and
// Mcp-Name, each input-schema property annotated x-mcp-header travels in
// an Mcp-Param-<name> header equal to the argument. The go-sdk v1.8.0
// keeps that check unexported (validateParamHeaders in
// mcp/streamable_headers.go); what follows is the same rule, with the same
// error texts, over the schema warden registered for the tool.

// paramHeader binds an input-schema property (a path of property names)
// to the header that carries it.
type paramHeader struct {
	path   []string
	header string
}

// headerProperty is the part of a schema property x-mcp-header reads.
type headerProperty struct {
	XMCPHeader json.RawMessage           `json:"x-mcp-header"`
	Properties map[string]headerProperty `json:"properties"`
}

// paramHeadersOf returns the x-mcp-header bindings of an input schema.
func paramHeadersOf(schema json.RawMessage) []paramHeader {
	var root headerProperty
	if json.Unmarshal(schema, &root) != nil {
		return nil
	}
	return collectParamHeaders(root.Properties, nil, nil)
}

func collectParamHeaders(props map[string]headerProperty, prefix []string, out []paramHeader) []paramHeader {
	for name, p := range props {
		path := append(append([]string(nil), prefix...), name)
		var header string
		if json.Unmarshal(p.XMCPHeader, &header) == nil && header != "" {
			out = append(out, paramHeader{path: path, header: header})
		}
		out = collectParamHeaders(p.Properties, path, out)
	}
	return out
}

// checkParamHeaders is the go-sdk's validateParamHeaders: every bound
// argument present in params has its Mcp-Param-* header, equal to it, and
// no header names an absent argument.
func checkParamHeaders(h http.Header, params json.RawMessage, bindings []paramHeader) error {
	if len(bindings) == 0 {
		return nil
	}
	var raw struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &raw) != nil {
		return nil
	}
	for _, b := range bindings {
		full := "Mcp-Param-" + b.header
		value := h.Get(full)
		arg, ok := lookupArgument(raw.Arguments, b.path)
		if !ok || string(arg) == "null" {
			if value != "" {
				return fmt.Errorf("header mismatch: unexpected %s header for absent or null parameter %q", full, strings.Join(b.path, "."))
			}
			continue
		}
		if value == "" {
			return fmt.Errorf("header mismatch: missing %s header for parameter %q", full, strings.Join(b.path, "."))
		}
		decoded, ok := decodeHeaderValue(value)
		if !ok {
			return fmt.Errorf("header mismatch: %s header contains invalid Base64 encoding", full)
		}
		body := headerPrimitive(arg)
		if body == nil {
			return fmt.Errorf("header mismatch: %s header present but body parameter %q is not a primitive type", full, strings.Join(b.path, "."))
		}
		if !headerEqual(decoded, body) {
			return fmt.Errorf("header mismatch: %s header value '%s' does not match body value", full, value)
		}
	}
	return nil
}

func lookupArgument(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	if len(path) == 0 {
		return nil, false
	}
	cur, ok := args[path[0]]
	for _, part := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		cur, ok = obj[part]
	}
	return cur, ok
}

// maxSafeInteger bounds the integers a double holds exactly.
const maxSafeInteger = 1<<53 - 1

// headerPrimitive is a JSON string, boolean or safe integer as the go-sdk
// compares it (string, bool, int64), or nil.
func headerPrimitive(raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	switch v := v.(type) {
	case string, bool:
		return v
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || v < -maxSafeInteger || v > maxSafeInteger {
			return nil
		}
		return int64(v)
	}
	return nil
}

func headerEqual(header string, body any) bool {
	switch b := body.(type) {
	case int64:
		n, err := strconv.ParseFloat(header, 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n != math.Trunc(n) || n < -maxSafeInteger || n > maxSafeInteger {
			return false
		}
		return int64(n) == b
	case bool:
		return header == strconv.FormatBool(b)
	case string:
		return header == b
	}
	return false
}

// decodeHeaderValue undoes SEP-2243's =?base64?…?= wrapping.
func decodeHeaderValue(v string) (string, bool) {
	if enc, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if enc, ok = strings.CutSuffix(enc, "?="); ok {
			dec, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				return "", false
			}
			return string(dec), true
		}
	}
	return v, true
}

// metaProtocolVersion is the _meta key of a 2026-07-28 request's version.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// checkTaskVersion holds an HTTP request the task protocol answers to the
// go-sdk's rule for SEP-2575 per-request metadata: a call whose
// Mcp-Protocol-Version header says 2026-07-28 or later, or whose _meta
// names a protocol version, carries both, and they agree. The go-sdk
// refuses such a request with these errors before it reads it; here the
// request's generation is its header's (generationOf with fromHeader), so a
// body cannot make a 2025-11-25 request a 2026-07-28 one.
func checkTaskVersion(h http.Header, c *taskCall) *jsonrpc.Error {
	header, meta := h.Get("Mcp-Protocol-Version"), c.Meta.ProtocolVersion
	if header < protocolMRTR && meta == "" {
		return nil
	}
	switch {
	case header == "":
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("%s header is required for requests carrying %q", "Mcp-Protocol-Version", metaProtocolVersion)}
	case meta == "":
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("missing or invalid _meta field %q", metaProtocolVersion)}
	case header != meta:
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("%s header %q does not match request %s %q", "Mcp-Protocol-Version", header, metaProtocolVersion, meta)}
	}
	return nil
}
