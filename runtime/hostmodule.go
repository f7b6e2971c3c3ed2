package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/runtime/internal/guest"
	"github.com/warden-run/warden/tool"
)

// hostModuleName is the import module of every warden host function.
const hostModuleName = "warden"

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

// instantiateHostModule instantiates the warden host module in wz (the
// compiler's runtime, or the interpreter tier's).
func (r *Runtime) instantiateHostModule(ctx context.Context, wz wazero.Runtime) error {
	b := wz.NewHostModuleBuilder(hostModuleName)
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
func (r *Runtime) hostImports() map[string]guest.FuncSig {
	sigs := map[string]guest.FuncSig{
		"log":      {Params: []api.ValueType{api.ValueTypeI32, api.ValueTypeI64}},
		"progress": {Params: []api.ValueType{api.ValueTypeI64}},
	}
	for name := range r.capabilities {
		sigs[name] = guest.FuncSig{Params: []api.ValueType{api.ValueTypeI64}, Results: []api.ValueType{api.ValueTypeI64}}
	}
	return sigs
}

var logLevels = []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}

func (r *Runtime) hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	state := guest.StateFrom(ctx, "warden.log")
	level := int32(stack[0])
	msg := readGuest(mod, stack[1], guest.MaxLogBytes, "log message")
	guest.ChargeHost(state, len(msg))
	slogLevel := slog.LevelInfo
	if level >= 0 && int(level) < len(logLevels) {
		slogLevel = logLevels[level]
	}
	// The observer logs it (the MCP server also forwards it to the client);
	// logging here too would print every line twice.
	state.LogLine(slogLevel, string(msg))
	// Forwarding the line to a client may wait on its connection.
	guest.StopIfDone(ctx, "warden.log")
}

func (r *Runtime) hostProgress(ctx context.Context, mod api.Module, stack []uint64) {
	state := guest.StateFrom(ctx, "warden.progress")
	raw := readGuest(mod, stack[0], guest.MaxLogBytes, "progress report")
	guest.ChargeHost(state, len(raw))
	var p tool.Progress
	if err := json.Unmarshal(raw, &p); err != nil {
		r.log.Debug("dropped malformed progress report", "tool", state.Call.Tool, "error", err)
		return
	}
	if last, sent := state.ReportProgress(p); !sent {
		r.log.Debug("dropped non-increasing progress report", "tool", state.Call.Tool,
			"progress", p.Progress, "previous", last)
	}
	guest.StopIfDone(ctx, "warden.progress")
}

type hostReply struct {
	Result any         `json:"result,omitempty"`
	Error  *tool.Error `json:"error,omitempty"`
}

func (r *Runtime) serveCapability(ctx context.Context, mod api.Module, c hostfuncs.Capability, packed uint64) uint64 {
	state := guest.StateFrom(ctx, "warden."+c.Name())
	request := readGuest(mod, packed, guest.MaxRequestBytes, "warden."+c.Name()+" request")
	result, err := c.Serve(ctx, state.Call, request)
	// A capability that waits (the network, the client, a language
	// server) returns when the call's context ends; the guest then does
	// not get its reply, nor run on to answer past its deadline.
	guest.StopIfDone(ctx, "warden."+c.Name())
	reply := hostReply{Result: result}
	if err != nil {
		reply = hostReply{Error: guest.AsToolError(err)}
		state.Tell(reply.Error)
		if reply.Error.Kind == tool.KindInternal {
			r.log.Error("capability failed", "capability", c.Name(), "tool", state.Call.Tool, "error", err)
		}
	}
	data, err := json.Marshal(reply)
	if err != nil {
		data, _ = json.Marshal(hostReply{Error: tool.Errorf(tool.KindInternal, "encode %s reply: %v", c.Name(), err)})
	}
	guest.ChargeHost(state, len(request)+len(data))
	// Replies are host allocations made for the guest: their sum over the
	// call counts against the memory limit, so a guest cannot make the host
	// produce more than it may hold itself by asking again and again.
	state.ReplyBytes += uint64(len(data))
	if limit := state.Inst.Memory.Limit; state.ReplyBytes > limit {
		state.Inst.Memory.Refused.Store(true)
		panic(tool.Errorf(tool.KindOutOfMemory, "warden.%s replies of this call add up to %d bytes, over the memory limit of %d MiB",
			c.Name(), state.ReplyBytes, limit>>20))
	}
	return state.Inst.WriteGuest(ctx, data)
}
