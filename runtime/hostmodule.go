package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/tetratelabs/wazero/api"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/runtime/internal/instrument"
	"github.com/warden-run/warden/tool"
)

// hostModuleName is the import module of every warden host function.
const hostModuleName = "warden"

// Bounds on what a guest may pass to a host function in one go.
const (
	maxLogBytes     = 16 << 10
	maxRequestBytes = 4 << 20
)

// Fuel charged for host work done on a guest's behalf: a fixed cost per
// call (the transition out of the guest and back) plus the bytes moved, at
// the rate the pass charges guest bulk-memory instructions.
const (
	hostCallFuel     = 1000
	hostBytesPerFuel = instrument.BulkBytesPerFuel
)

func chargeHost(state *callState, bytes int) {
	state.inst.meter.Charge(hostCallFuel + int64(bytes/hostBytesPerFuel))
}

// callStateKey carries the *callState of the running call to host functions.
type callStateKey struct{}

// callState is what host functions need to know about the call they serve.
type callState struct {
	call *hostfuncs.Call
	inst *instance
	// lastProgress enforces that progress only increases.
	lastProgress float64
	hasProgress  bool
	// denial is the last capability request refused during the call whose
	// refusal the guest saw as an ordinary failure (an Extism plugin's file
	// or config access); a failed call is then reported as denied.
	denial *tool.Error
	// logs bounds the call's log lines (warden.log, Extism log functions).
	logs logBudget
	// replyBytes counts the bytes of capability replies the host produced
	// for the guest during the call, against the memory limit.
	replyBytes uint64
}

func newCallState(call *hostfuncs.Call, in *instance, limits Limits) *callState {
	return &callState{call: call, inst: in, logs: logBudget{maxBytes: limits.LogBytes, maxLines: limits.LogLines}}
}

// callStateFrom returns the state of the call a host function serves, or
// fails the guest with a typed error when the host must not do its work:
//   - outside a call: the module is loading (a start function, _initialize
//     or warden_describe called a host function); no grants, no observer,
//     nothing to serve;
//   - from inside warden_alloc, which the host calls re-entrantly to place a
//     reply: a host call there would recurse without bound (each reply
//     allocates, each allocation calls the host);
//   - after the call's deadline or cancellation: the meter's watchdog then
//     explains the failure as timeout or cancelled.
func callStateFrom(ctx context.Context, what string) *callState {
	s, ok := ctx.Value(callStateKey{}).(*callState)
	if !ok {
		panic(tool.Errorf(tool.KindBadOutput,
			"%s called while the module loads (start function, _initialize or describe): host functions are unavailable at load, only during warden_call", what))
	}
	if s.inst.inAlloc > 0 {
		panic(tool.Errorf(tool.KindBadOutput,
			"%s called from inside warden_alloc: warden_alloc must only allocate, a host call there would recurse (docs/abi.md)", what))
	}
	if err := ctx.Err(); err != nil {
		panic(fmt.Errorf("%s: %w", what, err))
	}
	return s
}

// logBudget bounds what a call may log: lines past maxLines or bytes past
// maxBytes are dropped and counted, and one note says so when the call ends.
type logBudget struct {
	maxBytes, maxLines int
	bytes, lines       int
	droppedBytes       int64
	droppedLines       int64
}

// admit reports whether a line of n bytes still fits, counting it either way.
func (b *logBudget) admit(n int) bool {
	if b.lines+1 > b.maxLines || b.bytes+n > b.maxBytes {
		b.droppedLines++
		b.droppedBytes += int64(n)
		return false
	}
	b.lines++
	b.bytes += n
	return true
}

// note returns the line that reports what was dropped, or "" if nothing was.
func (b *logBudget) note() string {
	if b.droppedLines == 0 {
		return ""
	}
	return fmt.Sprintf("dropped %d log lines (%d bytes) over the per-call limit of %d lines and %d bytes (tools.defaults.log_lines, log_bytes)",
		b.droppedLines, b.droppedBytes, b.maxLines, b.maxBytes)
}

// logLine sends one guest log line to the call's observer if the call's log
// budget admits it.
func (state *callState) logLine(level slog.Level, msg string) {
	if state.logs.admit(len(msg)) {
		state.call.Observer.Log(level, msg)
	}
}

// finishLogs emits the note of what the log budget dropped, once per call.
func (state *callState) finishLogs() {
	if note := state.logs.note(); note != "" {
		state.call.Observer.Log(slog.LevelWarn, note)
	}
}

// readGuest copies [ptr, ptr+len) out of the guest's memory. A range outside
// memory fails the call with bad_output: a guest cannot make the host read
// anything but its own memory.
func readGuest(mod api.Module, packed uint64, limit int, what string) []byte {
	ptr, size := uint32(packed>>32), uint32(packed)
	if int64(size) > int64(limit) {
		panic(tool.Errorf(tool.KindBadOutput, "%s is %d bytes, over the limit of %d", what, size, limit))
	}
	view, ok := mod.Memory().Read(ptr, size)
	if !ok {
		panic(tool.Errorf(tool.KindBadOutput, "%s at [%d, %d) lies outside guest memory (%d bytes)",
			what, ptr, uint64(ptr)+uint64(size), mod.Memory().Size()))
	}
	return append([]byte(nil), view...)
}

func (r *Runtime) instantiateHostModule(ctx context.Context) error {
	b := r.wz.NewHostModuleBuilder(hostModuleName)
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(r.hostLog), []api.ValueType{api.ValueTypeI32, api.ValueTypeI64}, nil).
		WithParameterNames("level", "message").Export("log")
	b.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(r.hostProgress), []api.ValueType{api.ValueTypeI64}, nil).
		WithParameterNames("report").Export("progress")
	names := make([]string, 0, len(r.capabilities))
	for name := range r.capabilities {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		capability := r.capabilities[name]
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				stack[0] = r.serveCapability(ctx, mod, capability, stack[0])
			}), []api.ValueType{api.ValueTypeI64}, []api.ValueType{api.ValueTypeI64}).
			WithParameterNames("request").Export(name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("instantiate host module %q: %w", hostModuleName, err)
	}
	return nil
}

// hostImports returns the host functions a module may import, with their
// signatures, for load-time checks.
func (r *Runtime) hostImports() map[string]funcSig {
	sigs := map[string]funcSig{
		"log":      {params: []api.ValueType{api.ValueTypeI32, api.ValueTypeI64}},
		"progress": {params: []api.ValueType{api.ValueTypeI64}},
	}
	for name := range r.capabilities {
		sigs[name] = funcSig{params: []api.ValueType{api.ValueTypeI64}, results: []api.ValueType{api.ValueTypeI64}}
	}
	return sigs
}

var logLevels = []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}

func (r *Runtime) hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	state := callStateFrom(ctx, "warden.log")
	level := int32(stack[0])
	msg := readGuest(mod, stack[1], maxLogBytes, "log message")
	chargeHost(state, len(msg))
	slogLevel := slog.LevelInfo
	if level >= 0 && int(level) < len(logLevels) {
		slogLevel = logLevels[level]
	}
	// The observer logs it (the MCP server also forwards it to the client);
	// logging here too would print every line twice.
	state.logLine(slogLevel, string(msg))
}

func (r *Runtime) hostProgress(ctx context.Context, mod api.Module, stack []uint64) {
	state := callStateFrom(ctx, "warden.progress")
	raw := readGuest(mod, stack[0], maxLogBytes, "progress report")
	chargeHost(state, len(raw))
	var p tool.Progress
	if err := json.Unmarshal(raw, &p); err != nil {
		r.log.Debug("dropped malformed progress report", "tool", state.call.Tool, "error", err)
		return
	}
	if state.hasProgress && p.Progress <= state.lastProgress {
		r.log.Debug("dropped non-increasing progress report", "tool", state.call.Tool,
			"progress", p.Progress, "previous", state.lastProgress)
		return
	}
	state.lastProgress, state.hasProgress = p.Progress, true
	state.call.Observer.Progress(p)
}

type hostReply struct {
	Result any         `json:"result,omitempty"`
	Error  *tool.Error `json:"error,omitempty"`
}

func (r *Runtime) serveCapability(ctx context.Context, mod api.Module, c hostfuncs.Capability, packed uint64) uint64 {
	state := callStateFrom(ctx, "warden."+c.Name())
	request := readGuest(mod, packed, maxRequestBytes, "warden."+c.Name()+" request")
	result, err := c.Serve(ctx, state.call, request)
	reply := hostReply{Result: result}
	if err != nil {
		reply = hostReply{Error: asToolError(err)}
		if reply.Error.Kind == tool.KindInternal {
			r.log.Error("capability failed", "capability", c.Name(), "tool", state.call.Tool, "error", err)
		}
	}
	data, err := json.Marshal(reply)
	if err != nil {
		data, _ = json.Marshal(hostReply{Error: tool.Errorf(tool.KindInternal, "encode %s reply: %v", c.Name(), err)})
	}
	chargeHost(state, len(request)+len(data))
	// Replies are host allocations made for the guest: their sum over the
	// call counts against the memory limit, so a guest cannot make the host
	// produce more than it may hold itself by asking again and again.
	state.replyBytes += uint64(len(data))
	if limit := state.inst.memory.limit; state.replyBytes > limit {
		state.inst.memory.refused.Store(true)
		panic(tool.Errorf(tool.KindOutOfMemory, "warden.%s replies of this call add up to %d bytes, over the memory limit of %d MiB",
			c.Name(), state.replyBytes, limit>>20))
	}
	return state.inst.writeGuest(ctx, data)
}

// asToolError returns err's *tool.Error, or wraps it as internal.
func asToolError(err error) *tool.Error {
	var te *tool.Error
	if errors.As(err, &te) {
		return te
	}
	return &tool.Error{Kind: tool.KindInternal, Message: err.Error()}
}
