package extism

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strings"
	"unicode/utf8"

	sdk "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"

	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/runtime/internal/guest"
	"github.com/warden-run/warden/tool"
)

// extismUserFuncs are the extism:host/user functions warden offers: the
// notifications of hyper-mcp's host interface that map onto a call's
// tool.Observer, and notify_tool_list_changed. (Sampling, elicitation,
// roots and OAuth are not offered; a plugin importing them is refused at
// load, naming them.)
var extismUserFuncs = map[string]guest.FuncSig{
	"notify_progress":          {Params: []api.ValueType{api.ValueTypeI64}},
	"notify_logging_message":   {Params: []api.ValueType{api.ValueTypeI64}},
	"notify_tool_list_changed": {},
}

// hostFunctions are the functions warden gives every instance of x: the
// extism:host/user notifications, and its own versions of the
// extism:host/env functions in extismServed (moved to extismWardenModule by
// the loader).
func (x *plugin) hostFunctions() []sdk.HostFunction {
	i64 := []sdk.ValueType{sdk.ValueTypeI64}
	fns := []sdk.HostFunction{
		sdk.NewHostFunctionWithStack("notify_progress", x.notifyProgress, i64, nil),
		sdk.NewHostFunctionWithStack("notify_logging_message", x.notifyLoggingMessage, i64, nil),
		sdk.NewHostFunctionWithStack("notify_tool_list_changed", x.notifyToolListChanged, nil, nil),
	}
	served := []sdk.HostFunction{
		sdk.NewHostFunctionWithStack("http_request", x.httpRequest, []sdk.ValueType{sdk.ValueTypeI64, sdk.ValueTypeI64}, i64),
		sdk.NewHostFunctionWithStack("config_get", x.configGet, i64, i64),
		sdk.NewHostFunctionWithStack("get_log_level", func(_ context.Context, _ *sdk.CurrentPlugin, stack []uint64) {
			// Debug and up: the observer's consumer filters further.
			stack[0] = api.EncodeI32(sdk.LogLevelDebug.ExtismCompat())
		}, nil, []sdk.ValueType{sdk.ValueTypeI32}),
	}
	for name, level := range map[string]slog.Level{
		"log_trace": slog.LevelDebug - 4, "log_debug": slog.LevelDebug, "log_info": slog.LevelInfo,
		"log_warn": slog.LevelWarn, "log_error": slog.LevelError,
	} {
		served = append(served, sdk.NewHostFunctionWithStack(name, func(ctx context.Context, cp *sdk.CurrentPlugin, stack []uint64) {
			state := guest.StateFrom(ctx, "extism "+name)
			msg := readKernel(cp, stack[0], guest.MaxLogBytes, "log message")
			_ = cp.Free(stack[0])
			x.log(state, level, string(msg))
			guest.StopIfDone(ctx, "extism "+name)
		}, i64, nil))
	}
	for i := range served {
		served[i].SetNamespace(extismWardenModule)
	}
	return append(fns, served...)
}

// readKernel copies the kernel memory block at offset, failing the call
// with bad_output when it is not a block or is over limit.
func readKernel(cp *sdk.CurrentPlugin, offset uint64, limit int, what string) []byte {
	n, err := cp.Length(offset)
	if err != nil || (n == 0 && offset != 0) {
		panic(tool.Errorf(tool.KindBadOutput, "%s at offset %d is not an Extism memory block", what, offset))
	}
	if n > uint64(limit) {
		panic(tool.Errorf(tool.KindBadOutput, "%s is %d bytes, over the limit of %d", what, n, limit))
	}
	if offset == 0 {
		return nil
	}
	b, err := cp.ReadBytes(offset)
	if err != nil {
		panic(tool.Errorf(tool.KindBadOutput, "%s at offset %d: %v", what, offset, err))
	}
	return b
}

// writeKernel copies b into a new kernel block and returns its offset (0
// for no bytes).
func writeKernel(cp *sdk.CurrentPlugin, b []byte, what string) uint64 {
	if len(b) == 0 {
		return 0
	}
	off, err := cp.WriteBytes(b)
	if err != nil || off == 0 {
		// The kernel's allocator could not grow its memory: the tool's
		// memory limit (the allocator has marked the call out of memory).
		panic(tool.Errorf(tool.KindOutOfMemory, "no room for %s (%d bytes) in the plugin's memory", what, len(b)))
	}
	return off
}

func (x *plugin) log(state *guest.CallState, level slog.Level, msg string) {
	guest.ChargeHost(state, len(msg))
	state.LogLine(level, msg)
}

// notifyProgress is hyper-mcp's notify_progress: an MCP
// ProgressNotificationParam (progressToken, progress, total?, message?).
// The token is warden's to set; the rest goes to the observer, dropped
// unless it increases.
func (x *plugin) notifyProgress(ctx context.Context, cp *sdk.CurrentPlugin, stack []uint64) {
	state := guest.StateFrom(ctx, "notify_progress")
	raw := readKernel(cp, stack[0], guest.MaxLogBytes, "progress notification")
	guest.ChargeHost(state, len(raw))
	var p tool.Progress
	if err := json.Unmarshal(raw, &p); err != nil {
		x.host.Log.Debug("dropped malformed progress notification", "tool", state.Call.Tool, "error", err)
		return
	}
	state.ReportProgress(p) // dropped unless it increases
	guest.StopIfDone(ctx, "notify_progress")
}

// notifyToolListChanged is hyper-mcp's notify_tool_list_changed. It is
// offered so that plugins importing it load and run, but the tools warden
// serves stay the ones the module described at load: those are what the
// person installing it reviewed, pinned and granted, and a tool a plugin
// invents mid-session (its list lives in one instance's memory, which
// isolation gives each session its own of) has been through none of that.
// The call is noted in the server's log and the plugin is told it worked;
// calling a tool that is not listed stays not_found.
func (x *plugin) notifyToolListChanged(ctx context.Context, _ *sdk.CurrentPlugin, _ []uint64) {
	state := guest.StateFrom(ctx, "notify_tool_list_changed")
	guest.ChargeHost(state, 0)
	x.host.Log.Info("plugin says its tool list changed; warden keeps serving the tools it described at load (docs/abi.md, Extism plugins)",
		"tool", state.Call.Tool, "module", state.Call.Module)
}

// mcpLevels maps MCP logging levels onto slog's.
var mcpLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "notice": slog.LevelInfo,
	"warning": slog.LevelWarn, "error": slog.LevelError, "critical": slog.LevelError,
	"alert": slog.LevelError, "emergency": slog.LevelError,
}

// notifyLoggingMessage is hyper-mcp's notify_logging_message: an MCP
// LoggingMessageNotificationParam (level, logger?, data). data is logged as
// is when it is a string, as JSON otherwise.
func (x *plugin) notifyLoggingMessage(ctx context.Context, cp *sdk.CurrentPlugin, stack []uint64) {
	state := guest.StateFrom(ctx, "notify_logging_message")
	raw := readKernel(cp, stack[0], guest.MaxLogBytes, "logging notification")
	level, msg, err := loggingMessage(raw)
	if err != nil {
		guest.ChargeHost(state, len(raw))
		x.host.Log.Debug("dropped malformed logging notification", "tool", state.Call.Tool, "error", err)
		return
	}
	x.log(state, level, msg)
	guest.StopIfDone(ctx, "notify_logging_message")
}

// loggingMessage decodes a LoggingMessageNotificationParam. An unknown
// level is info.
func loggingMessage(raw []byte) (slog.Level, string, error) {
	var n struct {
		Level  string          `json:"level"`
		Logger string          `json:"logger"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, "", err
	}
	level, ok := mcpLevels[n.Level]
	if !ok {
		level = slog.LevelInfo
	}
	msg := string(n.Data)
	var s string
	if json.Unmarshal(n.Data, &s) == nil {
		msg = s
	}
	if n.Logger != "" {
		msg = n.Logger + ": " + msg
	}
	return level, msg, nil
}

// extismHTTPRequest is the request JSON of the SDK's http_request.
type extismHTTPRequest struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
}

// netReply is the part of a warden.net reply http_request uses.
type netReply struct {
	Status     int                 `json:"status"`
	Headers    map[string][]string `json:"headers"`
	Body       *string             `json:"body"`
	BodyBase64 *string             `json:"bodyBase64"`
	Truncated  bool                `json:"truncated"`
}

// httpRequest replaces the SDK's http_request with a warden.net request
// under the call's grants: the same allow-list, SSRF guard, redirect checks
// and timeouts as a native tool's. Like the SDK's, a refused or failed
// request fails the call (with its kind: denied, timeout, failed, ...); the
// plugin never sees a response it was not allowed to get.
func (x *plugin) httpRequest(ctx context.Context, cp *sdk.CurrentPlugin, stack []uint64) {
	state := guest.StateFrom(ctx, "http_request")
	p, _ := ctx.Value(sdk.PluginCtxKey("plugin")).(*sdk.Plugin)
	if p == nil {
		panic(tool.Errorf(tool.KindInternal, "http_request outside an Extism call"))
	}
	p.LastStatusCode = 0
	clear(p.LastResponseHeaders)
	rawReq := readKernel(cp, stack[0], guest.MaxRequestBytes, "http_request request")
	_ = cp.Free(stack[0])
	var hr extismHTTPRequest
	if err := json.Unmarshal(rawReq, &hr); err != nil {
		panic(tool.Errorf(tool.KindBadOutput, "http_request: invalid request JSON: %v", err))
	}
	var body []byte
	if stack[1] != 0 {
		body = readKernel(cp, stack[1], guest.MaxRequestBytes, "http_request body")
		_ = cp.Free(stack[1])
	}
	net := x.host.Capabilities["net"]
	if net == nil {
		panic(tool.Errorf(tool.KindDenied, "HTTP request to %s: this warden has no net capability", redactURL(hr.URL)))
	}
	req := map[string]any{"op": "request", "method": strings.ToUpper(hr.Method), "url": hr.URL}
	if hr.Method == "" {
		req["method"] = "GET"
	}
	if len(hr.Headers) > 0 {
		req["headers"] = hr.Headers
	}
	if len(body) > 0 {
		req["bodyBase64"] = base64.StdEncoding.EncodeToString(body)
	}
	reqJSON, _ := json.Marshal(req)
	result, err := net.Serve(ctx, state.Call, reqJSON)
	// The request ends with the call's context; the plugin does not run on
	// past its deadline with the failure (or a late response).
	guest.StopIfDone(ctx, "http_request")
	if err != nil {
		te := guest.AsToolError(err)
		if te.Kind == tool.KindInvalidArguments {
			// The plugin built the request, not the caller.
			te = tool.Errorf(tool.KindFailed, "%s made an invalid HTTP request: %s", state.Call.Tool, te.Message)
		}
		panic(te)
	}
	var reply netReply
	if b, err := json.Marshal(result); err != nil || json.Unmarshal(b, &reply) != nil {
		panic(tool.Errorf(tool.KindInternal, "http_request: unexpected warden.net reply"))
	}
	respBody := []byte(nil)
	switch {
	case reply.Body != nil:
		respBody = []byte(*reply.Body)
	case reply.BodyBase64 != nil:
		if respBody, err = base64.StdEncoding.DecodeString(*reply.BodyBase64); err != nil {
			panic(tool.Errorf(tool.KindInternal, "http_request: warden.net body: %v", err))
		}
	}
	if reply.Truncated || int64(len(respBody)) > x.maxHTTP {
		panic(tool.Errorf(tool.KindFailed, "HTTP response from %s is over the limit of %d bytes", redactURL(hr.URL), min(x.maxHTTP, int64(len(respBody)))))
	}
	guest.ChargeHost(state, len(rawReq)+len(body)+len(respBody))
	p.LastStatusCode = reply.Status
	if p.LastResponseHeaders != nil {
		for k, v := range reply.Headers {
			p.LastResponseHeaders[strings.ToLower(k)] = strings.Join(v, ",")
		}
	}
	stack[0] = writeKernel(cp, respBody, "the HTTP response body")
}

// redactURL keeps a URL's scheme, host and path for messages: query
// strings carry tokens.
func redactURL(u string) string {
	u, _, _ = strings.Cut(u, "?")
	if len(u) > 200 {
		u = u[:200]
		for !utf8.ValidString(u) {
			u = u[:len(u)-1]
		}
		u += "…"
	}
	return u
}

// configGet replaces the SDK's config_get. A key of the tool's own config
// (tools.grants.<tool>.config, any key, matched ignoring case because
// config.yaml's keys are lower-cased) is answered from it, and no other
// tool sees it. Any other key is a warden env key, read through warden.env
// under the call's env grants. A key the call may not read is absent, as
// an unset one is, and the refusal is kept: if the call then fails, it is
// reported as denied, naming the grant.
func (x *plugin) configGet(ctx context.Context, cp *sdk.CurrentPlugin, stack []uint64) {
	state := guest.StateFrom(ctx, "config_get")
	key := readKernel(cp, stack[0], guest.MaxLogBytes, "config key")
	stack[0] = 0
	if v, ok := state.Call.Config[configkey.Fold(string(key))]; ok {
		value, set := v.Lookup()
		if !set {
			state.Denial = tool.Errorf(tool.KindFailed, "config %q: the host variable %s is not set (tools.grants.%s.config.%s.from_env)",
				key, v.FromEnv, configkey.Fold(state.Call.Tool), configkey.Fold(string(key)))
			return
		}
		guest.ChargeHost(state, len(key)+len(value))
		stack[0] = writeKernel(cp, []byte(value), "a config value")
		return
	}
	env := x.host.Capabilities["env"]
	if env == nil {
		state.Denial = tool.Errorf(tool.KindDenied, "config %q: this warden has no env capability", key)
		return
	}
	req, _ := json.Marshal(map[string]string{"op": "get", "key": string(key)})
	result, err := env.Serve(ctx, state.Call, req)
	if err != nil {
		if te := guest.AsToolError(err); te.Kind == tool.KindDenied {
			state.Denial = te
		}
		return
	}
	var reply struct {
		Value string `json:"value"`
	}
	if b, err := json.Marshal(result); err != nil || json.Unmarshal(b, &reply) != nil {
		panic(tool.Errorf(tool.KindInternal, "config_get: unexpected warden.env reply"))
	}
	guest.ChargeHost(state, len(key)+len(reply.Value))
	stack[0] = writeKernel(cp, []byte(reply.Value), "a config value")
}
