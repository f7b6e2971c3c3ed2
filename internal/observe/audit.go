package observe

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/termsafe"
)

// Line is one audit log line. Empty fields are left out.
type Line struct {
	Time    string `json:"time"`
	Who     string `json:"who"`
	Via     string `json:"via"`
	Session string `json:"session,omitempty"`
	// Method is the MCP method of the run of module code the line is of
	// (tools/call, resources/read, prompts/get, completion/complete).
	Method string `json:"method,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Module string `json:"module,omitempty"`
	// Target is what a feature request names: a resource URI, a prompt
	// name, a completion's reference.
	Target     string `json:"target,omitempty"`
	Event      string `json:"event"`
	Capability string `json:"capability,omitempty"`
	Op         string `json:"op,omitempty"`
	Path       string `json:"path,omitempty"`
	Mode       string `json:"mode,omitempty"`
	Host       string `json:"host,omitempty"`
	Topic      string `json:"topic,omitempty"`
	Key        string `json:"key,omitempty"`
	Language   string `json:"language,omitempty"`
	Gate       string `json:"gate,omitempty"`
	Outcome    string `json:"outcome,omitempty"`
	Decision   string `json:"decision,omitempty"`
	// From is the status a task left (event task_status; Outcome is the
	// one it entered), and Requests counts what it asks by method.
	From     string `json:"from,omitempty"`
	Requests string `json:"requests,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Decider is who answered an approval in the console.
	Decider    string   `json:"decider,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Fuel       *uint64  `json:"fuel,omitempty"`
	DurationMs *float64 `json:"duration_ms,omitempty"`
	// Arguments are the call's arguments, with log.audit_arguments only;
	// ArgumentsClipped says they were cut to the bound (and are then a
	// JSON string of the first bytes).
	Arguments        json.RawMessage `json:"arguments,omitempty"`
	ArgumentsClipped bool            `json:"arguments_clipped,omitempty"`
	// Dropped, on an "audit_dropped" line, counts the lines lost since the
	// last such line because the queue was full.
	Dropped uint64 `json:"dropped,omitempty"`
}

// AuditOptions configures an Audit.
type AuditOptions struct {
	// Path is the log file; rotated files are Path.1 (newest) to Path.Keep.
	Path string
	// MaxSize rotates the file before a line would take it past this many
	// bytes; 0 means DefaultAuditMaxSize.
	MaxSize int64
	// Keep is how many rotated files are kept; 0 keeps none.
	Keep int
	// Queue bounds the lines waiting for the writer; 0 means DefaultAuditQueue.
	Queue int
	// BatchLines flushes and fsyncs after this many lines; 0 means
	// DefaultAuditBatch.
	BatchLines int
	// FlushEvery flushes and fsyncs what is pending this often; 0 means
	// DefaultAuditFlush.
	FlushEvery time.Duration
	// Logger hears of write failures; nil discards.
	Logger *slog.Logger
	// Redact, when set, masks secret values in each encoded line
	// (internal/redact): a tool's error or argument may hold a value it
	// was granted, which the audit trail's readers were not.
	Redact func(string) string

	// tick replaces the FlushEvery ticker, for tests; flushed hears the
	// number of lines of each flush.
	tick    <-chan time.Time
	flushed chan<- int
	// hold, when set, keeps the writer from starting until it is closed.
	hold <-chan struct{}
}

// Defaults of AuditOptions.
const (
	DefaultAuditMaxSize = limits.DefaultAuditMaxSize
	DefaultAuditQueue   = 8192
	DefaultAuditBatch   = 256
	DefaultAuditFlush   = 200 * time.Millisecond
)

// Audit writes audit lines to a file from one goroutine: a call only
// encodes its line and hands it over. When the queue is full the line is
// dropped and counted, never waited for (a disk stall must not stall
// tools); the count is written to the log as an "audit_dropped" line and
// exported as warden_audit_dropped_total.
type Audit struct {
	opts    AuditOptions
	mu      sync.RWMutex // write's RLock against Close closing queue
	closed  bool
	queue   chan []byte
	dropped atomic.Uint64
	done    chan struct{}
	crash   chan struct{} // tests: stop without flushing

	// The writer goroutine's own.
	f        *os.File
	buf      *bufio.Writer
	size     int64
	pending  int
	reported uint64
	failed   bool
}

// OpenAudit opens (appends to) the audit log at o.Path and starts its writer.
func OpenAudit(o AuditOptions) (*Audit, error) {
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultAuditMaxSize
	}
	if o.Queue <= 0 {
		o.Queue = DefaultAuditQueue
	}
	if o.BatchLines <= 0 {
		o.BatchLines = DefaultAuditBatch
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = DefaultAuditFlush
	}
	if o.Keep < 0 {
		return nil, fmt.Errorf("log.audit_keep is %d; it must not be negative", o.Keep)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Audit{opts: o, queue: make(chan []byte, o.Queue), done: make(chan struct{}), crash: make(chan struct{})}
	if err := a.open(); err != nil {
		return nil, fmt.Errorf("log.audit: %w", err)
	}
	tick := o.tick
	if tick == nil {
		t := time.NewTicker(o.FlushEvery)
		tick = t.C
		go func() { <-a.done; t.Stop() }()
	}
	go a.run(tick)
	return a, nil
}

// Dropped returns how many lines were dropped because the queue was full
// or the file could not be written.
func (a *Audit) Dropped() uint64 { return a.dropped.Load() }

// write queues l. Every string of the line, the arguments' included, is
// made safe for a terminal as `warden tools --json` makes its output
// (termsafe.JSON): a C1 control, bidi override or invisible character a
// guest or client put in a path, key, reason or argument becomes a \uXXXX
// escape, so `cat` or `tail -f` of the file shows it as text while any JSON
// reader still gets the exact string that was asked for. This is the one
// place lines are encoded, so no field can skip it.
func (a *Audit) write(l *Line) {
	b, err := json.Marshal(l)
	if err != nil { // cannot happen: every field is a string, number or valid JSON
		a.dropped.Add(1)
		return
	}
	if a.opts.Redact != nil {
		b = []byte(a.opts.Redact(string(b)))
	}
	b = append(termsafe.JSON(b), '\n')
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		a.dropped.Add(1)
		return
	}
	select {
	case a.queue <- b:
	default:
		a.dropped.Add(1)
	}
}

// Close writes every queued line, fsyncs and closes the file.
func (a *Audit) Close() error {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.queue)
	}
	a.mu.Unlock()
	<-a.done
	if a.failed {
		return fmt.Errorf("audit log %s: some lines could not be written (see the log)", a.opts.Path)
	}
	return nil
}

func (a *Audit) open() error {
	f, err := os.OpenFile(a.opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	a.f, a.size = f, info.Size()
	if a.buf == nil {
		a.buf = bufio.NewWriterSize(f, 64<<10)
	} else {
		a.buf.Reset(f)
	}
	return nil
}

func (a *Audit) run(tick <-chan time.Time) {
	defer close(a.done)
	if a.opts.hold != nil {
		<-a.opts.hold
	}
	for {
		select {
		case line, ok := <-a.queue:
			if !ok {
				a.flush()
				a.f.Close()
				return
			}
			a.append(line)
			if a.pending >= a.opts.BatchLines {
				a.flush()
			}
		case <-tick:
			if a.pending > 0 || a.dropped.Load() != a.reported {
				a.flush()
			}
		case <-a.crash:
			a.f.Close() // what the buffer holds is lost, as in a crash
			return
		}
	}
}

func (a *Audit) append(line []byte) {
	if a.f == nil { // a rotation failed to reopen
		a.dropped.Add(1)
		return
	}
	if a.size > 0 && a.size+int64(len(line)) > a.opts.MaxSize {
		a.flush()
		if err := a.rotate(); err != nil {
			a.fail("rotate", err)
		}
		if a.f == nil {
			a.dropped.Add(1)
			return
		}
	}
	a.buf.Write(line) // errors surface at Flush
	a.size += int64(len(line))
	a.pending++
}

// flush writes a line counting new drops, then the buffer, and fsyncs.
func (a *Audit) flush() {
	if a.f == nil {
		return
	}
	if n := a.dropped.Load(); n != a.reported {
		b, _ := json.Marshal(Line{Time: time.Now().UTC().Format(time.RFC3339Nano), Who: "warden", Via: "warden", Event: "audit_dropped", Dropped: n - a.reported})
		a.reported = n
		a.buf.Write(append(b, '\n'))
		a.size += int64(len(b) + 1)
	}
	lines := a.pending
	a.pending = 0
	if err := a.buf.Flush(); err != nil {
		a.dropped.Add(uint64(lines))
		a.fail("write", err)
		a.buf.Reset(a.f)
	} else if err := a.f.Sync(); err != nil {
		a.fail("fsync", err)
	}
	if a.opts.flushed != nil {
		a.opts.flushed <- lines
	}
}

// rotate renames Path to Path.1, Path.1 to Path.2, ..., dropping the
// oldest beyond Keep, and opens a new Path.
func (a *Audit) rotate() error {
	a.f.Close()
	a.f = nil
	p, keep := a.opts.Path, a.opts.Keep
	var errs []error
	if keep == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	} else {
		if err := os.Remove(fmt.Sprintf("%s.%d", p, keep)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		for i := keep - 1; i >= 1; i-- {
			if err := os.Rename(fmt.Sprintf("%s.%d", p, i), fmt.Sprintf("%s.%d", p, i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		if err := os.Rename(p, p+".1"); err != nil {
			errs = append(errs, err)
		}
	}
	if err := a.open(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (a *Audit) fail(what string, err error) {
	a.failed = true
	a.opts.Logger.Error("audit log: "+what+" failed", "file", a.opts.Path, "error", err)
}
