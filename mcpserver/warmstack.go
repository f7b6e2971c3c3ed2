package mcpserver

import (
	"context"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk runs every request on a goroutine of its own, started for it,
// whose stack starts small (the runtime's adaptive start follows the
// average of the stacks it scans, mostly idle goroutines here). A request
// into module code goes deep (the go-sdk's and warden's middlewares, the
// door, the app's policy checks, the runtime, the guest's answer decoded
// with encoding/json), so the stack grew 2→4→8→16→32 KiB on every call,
// each step copying the stack and walking all of its frames: 19 % of
// `warden serve`'s CPU per stdio echo call (docs/performance.md, "Where
// warden's stdio call goes beyond the floor"). warmStacks runs those
// requests on a few long-lived goroutines instead, whose stacks grew once
// (RATIONALE.md, "Calls on warm stacks").

// warmStackBytes is the frame a worker grows its stack with when it
// starts: on top of the worker's own frames it makes the runtime move the
// stack to 64 KiB, more than a call of echo reaches (32 KiB), so that a
// deeper tool still grows in place at most once.
const warmStackBytes = 40 << 10

// warmIdleBytes is the frame a worker waits in. The collector halves the
// stack of a goroutine that uses less than a quarter of it; waiting under
// this frame, an idle worker uses more than a quarter of 64 KiB, so its
// stack stays grown between calls.
const warmIdleBytes = 20 << 10

// warmStacks is a bounded set of worker goroutines with grown stacks that
// run requests for their callers. A caller hands a request to an idle
// worker and waits for it: the request keeps its context, and its outcome
// (a result, an error, a panic) is the caller's, as if it had run on the
// caller's goroutine. When every worker is busy and the bound is reached,
// or after stop, the caller runs the request itself, as before: the pool
// never queues and never refuses.
type warmStacks struct {
	jobs    chan *warmJob // unbuffered: a send succeeds only into an idle worker
	quit    chan struct{}
	stopped sync.Once
	max     int32
	started atomic.Int32
	workers sync.WaitGroup // for tests: every worker has ended after stop
}

// warmJob is one request handed to a worker, and its outcome.
type warmJob struct {
	next   mcp.MethodHandler
	ctx    context.Context
	method string
	req    mcp.Request
	res    mcp.Result
	err    error
	// panicked, with value and stack, is set when next panicked on the
	// worker: the caller panics with the same value.
	panicked bool
	value    any
	stack    []byte
	done     chan struct{}
	// fn, when set, is a job of start: the worker runs it and reports
	// nothing, as a goroutine of its own would.
	fn func()
}

var warmJobs = sync.Pool{New: func() any { return &warmJob{done: make(chan struct{}, 1)} }}

// newWarmStacks returns a pool of at most max workers, started as they are
// first needed.
func newWarmStacks(max int) *warmStacks {
	return &warmStacks{jobs: make(chan *warmJob), quit: make(chan struct{}), max: int32(max)}
}

// do runs next on a worker's grown stack, or on the caller's when none is
// free, and returns what it returned. A panic of next is raised again in
// the caller with the same value, after next's own stack, which the
// caller's panic does not show, is printed to stderr.
func (p *warmStacks) do(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	j := warmJobs.Get().(*warmJob)
	j.next, j.ctx, j.method, j.req = next, ctx, method, req
	select {
	case p.jobs <- j:
	default:
		if !p.spawn(j) {
			*j = warmJob{done: j.done}
			warmJobs.Put(j)
			return next(ctx, method, req)
		}
	}
	<-j.done
	res, err, panicked, value, stack := j.res, j.err, j.panicked, j.value, j.stack
	*j = warmJob{done: j.done}
	warmJobs.Put(j)
	if panicked {
		println("panic on a warm-stack worker:\n" + string(stack))
		panic(value)
	}
	return res, err
}

// start runs fn on an idle worker's grown stack, or on a new worker, and
// reports false, without running it, when the pool is full or stopped. It
// does not wait: fn is a goroutine's body that should run on a warm stack
// (the stdio fast path's whole call, its reply written from there, so that
// a call is handed from the reader to a worker once, not from the reader
// to a goroutine of its own and from there to a worker). A panic of fn
// ends the process, as on a goroutine of its own.
func (p *warmStacks) start(fn func()) bool {
	j := warmJobs.Get().(*warmJob)
	j.fn = fn
	select {
	case p.jobs <- j:
		return true
	default:
		if p.spawn(j) {
			return true
		}
		*j = warmJob{done: j.done}
		warmJobs.Put(j)
		return false
	}
}

// spawn starts a worker for j, unless the pool is full or stopped.
func (p *warmStacks) spawn(j *warmJob) bool {
	select {
	case <-p.quit:
		return false
	default:
	}
	if p.started.Add(1) > p.max {
		p.started.Add(-1)
		return false
	}
	p.workers.Add(1)
	go p.work(j)
	return true
}

// work grows the worker's stack, runs j, then every job handed to it,
// until the pool stops.
func (p *warmStacks) work(j *warmJob) {
	defer p.workers.Done()
	defer p.started.Add(-1)
	growWarmStack()
	for ok := true; ok; j, ok = p.await() {
		j.exec()
	}
}

// exec runs the job and reports its end, catching a panic for the caller;
// a job of start it just runs.
func (j *warmJob) exec() {
	if fn := j.fn; fn != nil {
		*j = warmJob{done: j.done}
		warmJobs.Put(j)
		fn()
		return
	}
	defer func() {
		if v := recover(); v != nil {
			j.panicked, j.value, j.stack = true, v, debug.Stack()
		}
		j.done <- struct{}{}
	}()
	j.res, j.err = j.next(j.ctx, j.method, j.req)
}

// await waits, under a frame of warmIdleBytes (see there), for the next
// job; false once the pool stopped.
//
//go:noinline
func (p *warmStacks) await() (*warmJob, bool) {
	var pad [warmIdleBytes]byte
	keepFrame(pad[:])
	select {
	case j := <-p.jobs:
		return j, true
	case <-p.quit:
		return nil, false
	}
}

// keepFrame makes the compiler keep the array behind b in its caller's
// frame.
//
//go:noinline
func keepFrame(b []byte) { b[0] = 0 }

// growWarmStack grows the calling goroutine's stack in one step.
//
//go:noinline
func growWarmStack() {
	var pad [warmStackBytes]byte
	keepFrame(pad[:])
}

// stop ends the idle workers, and each busy one after its job; requests
// then run on their callers' goroutines.
func (p *warmStacks) stop() { p.stopped.Do(func() { close(p.quit) }) }

// onWarmStacks is the server's receiving middleware that runs every
// request into module code (the door's methods) on a warm stack.
//
// Being the outermost, it is the whole chain the go-sdk's dispatch calls:
// it keeps itself as the chain of the stdio fast path (stdiofast.go), so
// it must stay the last middleware added.
func (s *Server) onWarmStacks(next mcp.MethodHandler) mcp.MethodHandler {
	h := func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case MethodCallTool, MethodReadResource, MethodGetPrompt, MethodComplete:
			return s.warm.do(ctx, next, method, req)
		}
		return next(ctx, method, req)
	}
	s.chain, s.warmChain = h, next
	return h
}
