package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdkjson "github.com/segmentio/encoding/json"

	"github.com/warden-run/warden/internal/limits"
)

// DefaultMaxMessage is the default bound on one inbound JSON-RPC message: a
// stdio line or an HTTP request body (config server.max_message).
const DefaultMaxMessage = limits.DefaultMaxMessage

// maxNesting bounds how deeply a message's arrays and objects may nest. It
// equals the go-sdk's own decoding bound, so a message that passes here is
// never refused there (which, on stdio, would end the connection).
const maxNesting = 1000

// maxExactInt is the largest integer id accepted: the go-sdk decodes ids
// through float64, which holds every integer up to 2^53 exactly and no
// integer beyond it reliably.
const maxExactInt = 1 << 53

// refusal is a message the server answers itself, with a JSON-RPC error,
// instead of handing it to the go-sdk.
type refusal struct {
	code    int64
	message string
	// id is the request's id exactly as the client wrote it, or nil (null)
	// when the message has none that can be echoed.
	id json.RawMessage
}

// response renders the refusal as one JSON-RPC response, without a newline.
func (r *refusal) response() []byte {
	id := r.id
	if id == nil {
		id = json.RawMessage("null")
	}
	msg, _ := json.Marshal(r.message) // a string always marshals
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	fmt.Fprintf(&b, `,"error":{"code":%d,"message":`, r.code)
	b.Write(msg)
	b.WriteString(`}}`)
	return b.Bytes()
}

func parseError(format string, args ...any) *refusal {
	return &refusal{code: jsonrpc.CodeParseError, message: "parse error: " + fmt.Sprintf(format, args...)}
}

func invalidRequest(id json.RawMessage, format string, args ...any) *refusal {
	return &refusal{code: jsonrpc.CodeInvalidRequest, message: "invalid request: " + fmt.Sprintf(format, args...), id: id}
}

// call is a request with an id that the go-sdk will answer: the key under
// which it is in flight, and its id as the client wrote it.
type call struct {
	key string
	raw json.RawMessage
	req *jsonrpc.Request // the request as the go-sdk decodes it
}

// keyOf is the in-flight key of an id as the go-sdk decoded it; it agrees with
// the key inspect derives from the raw id.
func keyOf(id jsonrpc.ID) (string, bool) {
	switch v := id.Raw().(type) {
	case int64:
		return "n" + strconv.FormatInt(v, 10), true
	case string:
		return "s" + v, true
	}
	return "", false
}

// inspect checks one inbound message (a stdio line or an HTTP body) before
// the go-sdk sees it: JSON syntax, nesting depth, the "2.0" version tag, the
// shape of the id, and finally the go-sdk's own decoding. It returns the calls
// the message carries, or why it must be refused. Everything it accepts the
// go-sdk decodes without error, with the id the client sent.
func inspect(data []byte) ([]call, *refusal) {
	whole, ref := checkSyntax(data)
	if ref != nil {
		return nil, ref
	}
	switch whole[0] {
	case '{':
		_, c, err := inspectOne(whole)
		if err != nil {
			return nil, err
		}
		if c == nil {
			return nil, nil
		}
		return []call{*c}, nil
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(whole, &elems); err != nil {
			return nil, parseError("%v", err)
		}
		if len(elems) == 0 {
			return nil, invalidRequest(nil, "empty batch")
		}
		var calls []call
		seen := make(map[string]bool)
		for i, e := range elems {
			e = bytes.TrimSpace(e)
			if len(e) == 0 || e[0] != '{' {
				return nil, invalidRequest(nil, "batch element %d is not a JSON object", i)
			}
			_, c, err := inspectOne(e)
			if err != nil {
				err.message = fmt.Sprintf("batch element %d: %s", i, err.message)
				err.id = nil // the reply to a refused batch is one error, not one per element
				return nil, err
			}
			if c != nil {
				if seen[c.key] {
					return nil, invalidRequest(nil, "batch element %d: id %s appears twice in the batch", i, c.raw)
				}
				seen[c.key] = true
				calls = append(calls, *c)
			}
		}
		return calls, nil
	default:
		return nil, invalidRequest(nil, "a message must be a JSON object (or a batch of them), got %s", kindOf(whole[0]))
	}
}

// checkSyntax checks that data is one JSON value nesting at most maxNesting
// deep and returns it without surrounding space. A valid message costs one
// scan and no allocation; only an invalid one is decoded again, for the
// offset its error names.
func checkSyntax(data []byte) ([]byte, *refusal) {
	if depth, ok := nestingWithin(data, maxNesting); !ok {
		return nil, &refusal{code: jsonrpc.CodeParseError,
			message: fmt.Sprintf("parse error: arrays and objects nest deeper than %d levels (at least %d)", maxNesting, depth),
			id:      salvageID(data)}
	}
	if !json.Valid(data) {
		var whole json.RawMessage
		err := json.Unmarshal(data, &whole)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, parseError("invalid JSON at byte %d: %v", se.Offset, err)
		}
		return nil, parseError("invalid JSON: %v", err)
	}
	return bytes.TrimSpace(data), nil
}

// inspectMessage checks one stdio line as inspect does, for a transport
// that refuses batches, and returns the message the go-sdk decoded (so that
// it is decoded once), and the call it carries when it is a request with an
// id.
func inspectMessage(data []byte) (jsonrpc.Message, *call, *refusal) {
	whole, ref := checkSyntax(data)
	if ref != nil {
		return nil, nil, ref
	}
	switch whole[0] {
	case '{':
		return inspectOne(whole)
	case '[':
		// MCP has no batches since 2025-06-18: one line carrying thousands
		// of calls is refused whole.
		return nil, nil, invalidRequest(nil, "batches are not supported: send one JSON-RPC message per line")
	default:
		return nil, nil, invalidRequest(nil, "a message must be a JSON object, got %s", kindOf(whole[0]))
	}
}

// inspectOne checks one message object (valid JSON, nesting bounded) and
// returns it as the go-sdk decodes it, with its call when it is a request
// with an id.
func inspectOne(obj []byte) (jsonrpc.Message, *call, *refusal) {
	env := scanEnvelope(obj)
	echo := env.echoableID()
	if env.ids > 1 {
		return nil, nil, invalidRequest(nil, `the message has %d "id" members`, env.ids)
	}
	// The version as every client writes it needs no decoding: those bytes
	// decode to "2.0" and nothing else does but an escaped spelling.
	if string(env.version) != `"2.0"` && !escapedVersion(env.version) {
		got := "none"
		if env.version != nil {
			got = clip(env.version)
		}
		return nil, nil, invalidRequest(echo, `"jsonrpc" must be "2.0", got %s`, got)
	}
	var key string
	if env.id != nil {
		var r *refusal
		if key, r = idKey(env.id); r != nil {
			r.id = echo
			return nil, nil, r
		}
	}
	msg, err := decodeMessage(obj)
	if err != nil {
		return nil, nil, invalidRequest(echo, "%v", err)
	}
	var id jsonrpc.ID
	switch m := msg.(type) {
	case *jsonrpc.Request:
		id = m.ID
	case *jsonrpc.Response:
		id = m.ID
	}
	// The go-sdk must have read the same id as the scan above; a disagreement
	// (an escaped key, say) would echo or track the wrong id.
	if got, _ := keyOf(id); got != key {
		return nil, nil, invalidRequest(echo, "ambiguous id")
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		return msg, &call{key: key, raw: env.id, req: req}, nil
	}
	return msg, nil, nil
}

// escapedVersion reports whether raw, a "jsonrpc" member's value, is a
// string other than the plain `"2.0"` that decodes to "2.0" (escaped).
func escapedVersion(raw json.RawMessage) bool {
	var version string
	return raw != nil && json.Unmarshal(raw, &version) == nil && version == "2.0"
}

// wireMessage is the go-sdk's own decoding target for a JSON-RPC message
// (jsonrpc2.wireDecode in go-sdk v1.8.0), field for field, so that
// decodeMessage reads a message exactly as jsonrpc.DecodeMessage does.
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// sdkParseFlags are the go-sdk's decoding flags (its internal/json
// decoder sets exactly this one).
const sdkParseFlags = sdkjson.DontMatchCaseInsensitiveStructFields

// decodeMessage is [jsonrpc.DecodeMessage] for one JSON object that
// checkSyntax accepted (one valid value, nesting within the go-sdk's own
// bound), without the 32 KiB the go-sdk's decoding allocates and zeroes for
// each of its two decodes (a segmentio json.Decoder per Unmarshal, whose
// read buffer starts at 32 KiB even for a 100-byte message). It parses
// with the same library, the same flags and into the same struct the
// go-sdk does, so the message it returns is the one the go-sdk would
// have made; on any error it defers to jsonrpc.DecodeMessage, so the
// error, too, is the go-sdk's (RATIONALE.md, "The stdio call path").
func decodeMessage(obj []byte) (jsonrpc.Message, error) {
	if msg, ok := decodeMessageFast(obj); ok {
		return msg, nil
	}
	return jsonrpc.DecodeMessage(obj)
}

// decodeMessageFast is decodeMessage's path for a message the go-sdk
// decodes without error; ok is false for anything else.
func decodeMessageFast(obj []byte) (msg jsonrpc.Message, ok bool) {
	var w wireMessage
	if rest, err := sdkjson.Parse(obj, &w, sdkParseFlags); err != nil || len(rest) != 0 {
		return nil, false
	}
	if w.VersionTag != "2.0" {
		return nil, false
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, false
	}
	if len(w.Method) > 0 {
		var method string
		if rest, err := sdkjson.Parse(w.Method, &method, sdkParseFlags); err != nil || len(rest) != 0 {
			return nil, false
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: w.Params}, true
	}
	if !id.IsValid() {
		return nil, false
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, true
}

// idKey checks a raw id (valid JSON) and returns its in-flight key. MCP ids
// are strings or integers, never null; integers must survive the go-sdk's
// float64 decoding exactly, and strings must decode to what the client sent.
func idKey(raw json.RawMessage) (string, *refusal) {
	switch c := raw[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", invalidRequest(nil, "id: %v", err)
		}
		// Invalid UTF-8 and lone surrogates decode to U+FFFD: the id read
		// would not be the id sent, and the reply could not be matched.
		if !utf8.Valid(raw) || bytes.Count([]byte(s), []byte("\uFFFD")) > literalReplacements(raw) {
			return "", invalidRequest(nil, "id is not valid UTF-8 (or holds a lone surrogate)")
		}
		return "s" + s, nil
	case c == '-' || c >= '0' && c <= '9':
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != string(raw) {
			return "", invalidRequest(nil, "id %s is not an integer in canonical form (digits only, no fraction, exponent or leading zero)", clip(raw))
		}
		if n > maxExactInt || n < -maxExactInt {
			return "", invalidRequest(nil, "id %s is outside ±2^53, the integers a JSON number holds exactly; use a string id", raw)
		}
		return "n" + string(raw), nil
	case c == 'n':
		return "", invalidRequest(nil, "id must not be null (MCP requires a string or integer)")
	default:
		return "", invalidRequest(nil, "id must be a string or an integer, got %s", kindOf(c))
	}
}

// literalReplacements counts the U+FFFD characters a client wrote on purpose
// in a raw JSON string, literally or escaped.
func literalReplacements(raw []byte) int {
	return bytes.Count(raw, []byte("\uFFFD")) +
		bytes.Count(raw, []byte(`\ufffd`)) + bytes.Count(raw, []byte(`\uFFFD`))
}

func kindOf(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// clip shortens a raw value quoted in an error message.
func clip(raw []byte) string {
	const max = 64
	if len(raw) > max {
		return fmt.Sprintf("%s… (%d bytes)", raw[:max], len(raw))
	}
	return string(raw)
}

// envelope is what scanEnvelope found among an object's top-level members.
type envelope struct {
	version, id []byte // raw values, nil when absent
	ids         int    // how many "id" members
	method      bool   // whether it has a "method" member (a request or a notification)
}

// echoableID returns the raw id to echo in an error: a string or a number,
// exactly as written. Anything else (an object, an array, null) is no id, and
// the error carries null, as JSON-RPC prescribes.
func (e envelope) echoableID() json.RawMessage {
	if e.ids != 1 || len(e.id) == 0 || !json.Valid(e.id) {
		return nil
	}
	if c := e.id[0]; c == '"' || c == '-' || c >= '0' && c <= '9' {
		return json.RawMessage(e.id)
	}
	return nil
}

// salvageID returns the id of a message that cannot be parsed whole (too
// deep, or cut at the size bound), when its top-level members up to the id
// can be read, so that the client can tell which of its calls was refused.
func salvageID(data []byte) json.RawMessage {
	return scanEnvelope(data).echoableID()
}

// scanEnvelope reads the top-level members of the JSON object in data,
// skipping over nested values without decoding them. It stops at the first
// thing that is not well-formed, so it also reads the start of a message that
// was cut short.
func scanEnvelope(data []byte) envelope {
	var env envelope
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return env
	}
	i++
	for {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] != '"' {
			return env
		}
		end, ok := skipValue(data, i)
		if !ok {
			return env
		}
		rawKey := data[i:end]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return env
		}
		i = skipSpace(data, i+1)
		end, ok = skipValue(data, i)
		if !ok {
			return env
		}
		value := data[i:end]
		var key string
		if bytes.IndexByte(rawKey, '\\') < 0 {
			key = string(rawKey[1 : len(rawKey)-1])
		} else if json.Unmarshal(rawKey, &key) != nil {
			return env
		}
		switch key {
		case "jsonrpc":
			env.version = value
		case "id":
			env.id = value
			env.ids++
		case "method":
			env.method = true
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ',' {
			return env
		}
		i++
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at data[i]. It checks
// only what it needs to find the end: strings, and balanced brackets.
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch data[i] {
	case '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1, true
			}
		}
		return len(data), false
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, ok := skipValue(data, j)
				if !ok {
					return len(data), false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return len(data), false
	default:
		j := i
		for j < len(data) && bytes.IndexByte([]byte(",}] \t\r\n"), data[j]) < 0 {
			j++
		}
		return j, j > i && j < len(data)
	}
}

// nestingWithin reports whether the arrays and objects of data nest at most
// max levels deep, and the deepest level it saw, in one pass without
// allocating, before any decoder (whose stacks grow with depth) reads it.
func nestingWithin(data []byte, max int) (int, bool) {
	depth, deepest := 0, 0
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > max {
					return deepest, false
				}
			}
		case '}', ']':
			depth--
		}
	}
	return deepest, true
}
