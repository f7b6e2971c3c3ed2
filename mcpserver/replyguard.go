package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/termsafe"
)

// The go-sdk encodes a reply only as it writes it, and takes a write that
// fails for a broken transport: the connection ends (over stdio, `warden
// serve` with it) and, over HTTP, the session. A reply can fail to encode
// without anything being broken: the go-sdk's own resource-not-found error
// renders the client's URI with Go's %q into its JSON data, and a URI
// holding a control character (\x01) or a byte that is not UTF-8 makes that
// data invalid JSON. A reply that cannot be encoded is the server's fault
// and must cost the one request it answers, never the connection; so every
// reply is checked before it leaves (RATIONALE.md, "Replies are checked
// before they leave").

// encodableReplies is the server's outermost receiving middleware (but for
// onWarmStacks, which changes no reply): it
// checks that what a handler returns can be encoded as a JSON-RPC response
// before the go-sdk tries, and replaces what cannot with an error that can.
// Being outermost, it sees the reply of every method, whatever handler or
// middleware made it; requests the go-sdk refuses before any handler runs
// (an unknown method, params that do not decode) are answered with error
// messages only, which always encode.
//
// The check is the encoding itself, so a tools/call result leaves here
// encoded (encodedResult), and the go-sdk sends those bytes rather than
// encoding the result a second time: the same bytes it would have made.
func (s *Server) encodableReplies(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			if fixed, problem := encodableError(err); problem != nil {
				s.log.Warn("the error data of a reply is not valid JSON; the error was sent without it",
					"method", termsafe.Escape(method), "code", fixed.Code, "problem", termsafe.Line(problem.Error()))
				return nil, fixed
			}
			return res, err
		}
		if res == nil {
			return res, nil
		}
		data, problem := encodeAsSDK(res)
		if problem != nil {
			s.log.Error("the result of a request could not be encoded as JSON; an internal error was sent instead",
				"method", termsafe.Escape(method), "problem", termsafe.Line(problem.Error()))
			return nil, unencodableResult(method)
		}
		if method == MethodCallTool && !s.encodeTwice && !selectsStatelessProtocol(req) {
			return &encodedResult{Result: res, json: data}, nil
		}
		return res, nil
	}
}

// encodeAsSDK encodes v exactly as the go-sdk encodes a result it sends
// (jsonrpc2's jsonMarshal in go-sdk v1.8.0: encoding/json, no HTML
// escaping at the top level, no trailing newline), or says why it cannot.
// A tools/call result of the usual shape is written by
// appendCallToolResult, into the same bytes.
func encodeAsSDK(v any) ([]byte, error) {
	if e, ok := v.(*encodedResult); ok {
		// Already encodeAsSDK's bytes, compact: the go-sdk's encoder would
		// compact them into themselves (FuzzCallToolResultWire).
		return e.json, nil
	}
	if r, ok := v.(*mcp.CallToolResult); ok {
		if b, ok := appendCallToolResult(nil, r); ok {
			return b, nil
		}
	}
	return encodeAsSDKGeneral(v)
}

// encodeAsSDKGeneral is encodeAsSDK for any value: the go-sdk's own way.
func encodeAsSDKGeneral(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encodedResult is a result already encoded by encodableReplies. The go-sdk
// encodes a result with encoding/json, which takes the bytes of a
// json.Marshaler and compacts them (already compact, they stay as they
// are); so the reply carries the bytes encodeAsSDK made, which are the
// bytes the go-sdk would have made of Result (FuzzEncodedResult,
// FuzzEncodeOnceDifferential).
//
// The go-sdk changes a result after the middlewares only for a request of
// the stateless protocol (it sets the result's type and its server's
// identity in _meta): such a request's result is left to it
// (selectsStatelessProtocol).
type encodedResult struct {
	mcp.Result
	json []byte
}

func (r *encodedResult) MarshalJSON() ([]byte, error) { return r.json, nil }

// selectsStatelessProtocol reports whether the go-sdk may serve the
// tools/call req under the stateless protocol (2026-07-28 and later), whose
// results it changes after the middlewares: a request whose _meta names a
// protocol version (validateRequestMeta in go-sdk v1.8.0 reads any string
// there of at least 2026-07-28). Any version at all counts, and so do
// params of a type not expected here, so that no such result is ever
// encoded early.
func selectsStatelessProtocol(req mcp.Request) bool {
	if req == nil {
		return true
	}
	p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
	if !ok || p == nil {
		return true
	}
	_, named := p.Meta[mcp.MetaKeyProtocolVersion]
	return named
}

// encodableError returns what to send instead of err and why, or nil, nil
// when err can be sent as it is. Only an error that is itself a
// *jsonrpc.Error carries data on the wire (the go-sdk sends any other as
// its code and message); its message is a string, which always encodes,
// but its data is raw JSON, sent as it is, and must be valid. An error
// whose data is not keeps its code and message and loses the data.
func encodableError(err error) (*jsonrpc.Error, error) {
	je, ok := err.(*jsonrpc.Error) // not errors.As: exactly what the go-sdk reads
	if !ok || len(je.Data) == 0 || json.Valid(je.Data) {
		return nil, nil
	}
	return &jsonrpc.Error{Code: je.Code, Message: je.Message},
		fmt.Errorf("error %d %q: data %s is not valid JSON", je.Code, je.Message, clip(je.Data))
}

// unencodableResult is the reply to method when its result cannot be
// encoded. It names no detail of the result, which the server log has.
func unencodableResult(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("internal error: the result of %s could not be encoded as JSON, so it was not sent (the server log says why)", method)}
}

// errRejected makes the go-sdk treat a failed write as the loss of one
// message, not of the connection: its jsonrpc2 layer keeps a connection
// whose Write fails with an error matching its ErrRejected, and jsonrpc
// errors match by code (-32005, "rejected by transport"); the go-sdk does
// not export ErrRejected itself.
var errRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

// encodingSafeTransport is the transport-level net under
// [Server.encodableReplies], for the connections whose writes warden owns
// (stdio): a message that fails to encode does not end the connection. A
// reply is sent again as a JSON-RPC error with its id (so the client is
// answered); any other message (a notification, a request of the server's)
// is dropped, and its sender gets the error.
//
// It relies on the wrapped Write encoding a message whole before writing
// any of it, as [GuardedTransport] does, so that a failed encoding wrote
// nothing and the error can take its place.
type encodingSafeTransport struct {
	mcp.Transport
	log *slog.Logger
}

func (t *encodingSafeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &encodingSafeConnection{Connection: c, log: t.log}, nil
}

type encodingSafeConnection struct {
	mcp.Connection
	log *slog.Logger
}

func (c *encodingSafeConnection) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if err == nil || !isEncodingError(err) {
		return err
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		c.log.Error("a message to the client could not be encoded as JSON; it was dropped", "problem", termsafe.Line(err.Error()))
		return fmt.Errorf("%w: %w", errRejected, err)
	}
	c.log.Error("a reply could not be encoded as JSON; an error was sent instead", "problem", termsafe.Line(err.Error()))
	var fixed error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: "internal error: the reply could not be encoded as JSON, so it was not sent (the server log says why)"}
	if je, ok := resp.Error.(*jsonrpc.Error); ok {
		fixed = &jsonrpc.Error{Code: je.Code, Message: je.Message}
	}
	return c.Connection.Write(ctx, &jsonrpc.Response{ID: resp.ID, Error: fixed})
}

// isEncodingError reports whether err is encoding/json's failure to encode
// a value (not a failure to write it).
func isEncodingError(err error) bool {
	var me *json.MarshalerError
	var uv *json.UnsupportedValueError
	var ut *json.UnsupportedTypeError
	return errors.As(err, &me) || errors.As(err, &uv) || errors.As(err, &ut)
}
