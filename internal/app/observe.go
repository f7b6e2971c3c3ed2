package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// recorderRef holds the Recorder the capabilities, prompts and calls
// report to; it is set once serving starts (SetRecorder), after the
// capabilities were handed to the runtime.
type recorderRef struct {
	p atomic.Pointer[observe.Recorder]
}

// get returns the Recorder, or nil when observability is off.
func (r *recorderRef) get() observe.Recorder {
	if r == nil {
		return nil
	}
	if p := r.p.Load(); p != nil {
		return *p
	}
	return nil
}

// SetRecorder makes every later call, capability request, gate and prompt
// decision report to rec; nil turns reporting off.
func (a *App) SetRecorder(rec observe.Recorder) {
	a.caps.rec.p.Store(&rec)
}

// ObserveSources are the values metrics read from the app at scrape time.
func (a *App) ObserveSources() observe.Sources {
	return observe.Sources{
		Live: func() map[string]int {
			mods := a.catalog.Table().Modules()
			live := make(map[string]int, len(mods))
			for _, m := range mods {
				live[m.Name()] += m.Live()
			}
			return live
		},
		CompileCache: a.rt.CompileCacheStats,
		LanguageServers: func() map[string]observe.LanguageServers {
			out := map[string]observe.LanguageServers{}
			for _, s := range a.caps.servers.Servers() {
				u := out[s.Language]
				u.Running++
				u.MemoryBytes += s.Memory
				out[s.Language] = u
			}
			return out
		},
		Tiers: func() (interpreterCalls, compilerCalls, swapped, failed uint64) {
			s := a.rt.TierStats()
			return s.InterpreterCalls, s.CompilerCalls, s.Swaps, s.Failed
		},
		InstanceMemory: func() (used, peak, limit uint64) {
			m := a.rt.InstanceMemory()
			return m.Used, m.Peak, m.Limit
		},
		Approvals: a.approvals.stats,
	}
}

// Call implements mcpserver.Tools: the tool runs with the grants and limits
// config holds for it when the call starts; rec, when on, hears of it.
func (a *App) Call(ctx context.Context, c mcpserver.Call) (*tool.Result, error) {
	if a.caps.rec.get() == nil {
		return a.call(ctx, c)
	}
	module := ""
	t, known := a.catalog.Table().Tool(c.Name)
	if known {
		module = t.Module().Name()
	}
	return a.observed(ctx, observe.CallStart{Method: mcpserver.MethodCallTool, Tool: c.Name, Module: module,
		Session: c.Session, Known: known, Arguments: c.Arguments}, func(ctx context.Context) (*tool.Result, error) {
		return a.call(ctx, c)
	})
}

// observeFeature runs a feature request of m (resources/read, prompts/get,
// completion/complete) that runs as the tool subject under rec's record of
// it, as Call does a tools/call: a feature runs module code with its
// subject's grants, and the audit log shows every run of module code, its
// method, what it named, the tool it ran as, its module and its outcome.
// args are what audit_arguments records: the request.
func (a *App) observeFeature(ctx context.Context, method, target string, m *runtime.Module, subject string, call mcpserver.FeatureCall, args any, run func(context.Context) error) error {
	if a.caps.rec.get() == nil {
		return run(ctx)
	}
	raw, _ := json.Marshal(args)
	_, err := a.observed(ctx, observe.CallStart{Method: method, Tool: subject, Module: m.Name(), Session: call.Session,
		Target: target, Arguments: raw}, func(ctx context.Context) (*tool.Result, error) {
		return nil, run(ctx)
	})
	return err
}

// observed runs one request into module code, started as s, and records
// its outcome and duration (and, from a tool's result, its fuel).
func (a *App) observed(ctx context.Context, s observe.CallStart, run func(context.Context) (*tool.Result, error)) (*tool.Result, error) {
	rec := a.caps.rec.get()
	if rec == nil {
		return run(ctx)
	}
	start := time.Now()
	ctx = rec.CallStarted(ctx, s)
	res, err := run(ctx)
	end := observe.CallEnd{Kind: "ok", Duration: time.Since(start)}
	switch {
	case err != nil:
		end.Kind, end.Reason = string(tool.KindOf(err)), err.Error()
	case res != nil && res.Error != nil:
		end.Kind, end.Reason = string(res.Error.Kind), res.Error.Message
	}
	if res != nil && res.Outcome.Ran {
		end.Fuel = uint64(max(res.Outcome.Fuel, 0))
	}
	rec.CallEnded(ctx, end)
	return res, err
}

// useOf describes one capability request for the audit log: the fields
// of the request that say what was asked for (never contents).
func useOf(capability string, call *hostfuncs.Call, request []byte, err error, start time.Time) observe.Use {
	var req struct {
		Op       string `json:"op"`
		Path     string `json:"path"`
		URL      string `json:"url"`
		Topic    string `json:"topic"`
		Key      string `json:"key"`
		Language string `json:"language"`
	}
	_ = json.Unmarshal(request, &req) // a malformed request is recorded with what it had
	u := observe.Use{Capability: capability, Tool: call.Tool, Module: call.Module, Op: req.Op, Start: start}
	switch capability {
	case "fs":
		u.Path, u.Mode = req.Path, "write"
		switch req.Op {
		case "read", "list", "stat", "glob", "search":
			u.Mode = "read"
		}
	case "net":
		if p, perr := url.Parse(req.URL); perr == nil {
			u.Host = p.Host
		} else {
			u.Host = "(unparsable url)"
		}
	case "memory":
		u.Topic = req.Topic
	case "env":
		u.Key = req.Key
	case "lsp":
		u.Language, u.Path = req.Language, req.Path
	default:
		if u.Op == "" {
			u.Op = capability
		}
	}
	var te *tool.Error
	if errors.As(err, &te) && te.Kind == tool.KindDenied {
		u.Denied, u.Reason = true, te.Message
	}
	return u
}
