package mcpserver

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// GuardedTransport serves newline-delimited JSON-RPC over a byte stream (the
// stdio transport) so that no input can end the connection: it reads one line
// at a time within a size bound, answers every line the go-sdk would choke on
// with a JSON-RPC error (-32700 or -32600, echoing the client's id when there
// is one), refuses a request whose id is already in flight, and hands the
// rest, unchanged, to the go-sdk's own IOTransport.
//
// Without it, the go-sdk ends the connection at the first malformed message,
// losing every call in flight with it.
type GuardedTransport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxMessage bounds one line in bytes; 0 means [DefaultMaxMessage]. A
	// longer line is refused and skipped up to its newline without being
	// held in memory.
	MaxMessage int
	// MaxPending bounds the requests of this connection handed to the
	// go-sdk and not answered yet; 0 means [DefaultMaxPending]. Past it a
	// request is refused at once: the go-sdk queues whatever it is given,
	// so without a bound one client could pile up memory and goroutines.
	MaxPending int
	// Logger receives a warning per refused line; nil discards them.
	Logger *slog.Logger
}

// DefaultMaxPending is GuardedTransport's default MaxPending.
const DefaultMaxPending = 256

// Connect implements [mcp.Transport].
func (t *GuardedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	max := t.MaxMessage
	if max <= 0 {
		max = DefaultMaxMessage
	}
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out := &lockedWriter{w: t.Writer}
	pr, pw := io.Pipe()
	g := &guard{
		in:       t.Reader,
		out:      out,
		sdk:      pw,
		max:      max,
		pending:  cmp.Or(t.MaxPending, DefaultMaxPending),
		log:      log,
		inFlight: make(map[string]bool),
	}
	// The go-sdk reads only lines the guard let through; it bounds nothing
	// itself (the guard does) and writes through the same lock as the guard.
	inner, err := (&mcp.IOTransport{Reader: &pipeReader{pr, t.Reader}, Writer: out, MaxLineLength: -1}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	go g.run()
	return &guardedConnection{Connection: inner, g: g}, nil
}

// lockedWriter serializes whole messages: the go-sdk writes each message with
// one Write, and so does the guard, so replies never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// pipeReader is the go-sdk's end of the pipe; closing it (the session ended)
// also closes the client's input, which ends the guard's read loop.
type pipeReader struct {
	*io.PipeReader
	in io.Closer
}

func (p *pipeReader) Close() error {
	p.PipeReader.Close()
	return p.in.Close()
}

// guard is the read loop between the client's bytes and the go-sdk.
type guard struct {
	in      io.Reader
	out     io.Writer
	sdk     *io.PipeWriter
	max     int
	pending int
	log     *slog.Logger

	mu       sync.Mutex
	inFlight map[string]bool // keys of calls handed to the go-sdk and not yet answered
}

// run reads lines until the input ends, then ends the go-sdk's input.
func (g *guard) run() {
	err := g.readLines(bufio.NewReaderSize(g.in, 64<<10))
	if errors.Is(err, io.EOF) {
		err = nil
	}
	g.sdk.CloseWithError(err) // nil: the go-sdk sees io.EOF
}

// readLines hands each line to handle, holding at most g.max bytes of it.
func (g *guard) readLines(r *bufio.Reader) error {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case len(line)+len(chunk) > g.max:
			// Too long: keep the start (the id may be there), drop the rest.
			keep := min(len(chunk), g.max-len(line))
			line = append(line, chunk[:keep]...)
			dropped := int64(len(line)) + int64(len(chunk)-keep)
			if errors.Is(err, bufio.ErrBufferFull) {
				n, derr := discardLine(r)
				dropped += n
				err = derr
			}
			if err == nil {
				dropped-- // the newline is not part of the message
			}
			g.refuse(&refusal{code: jsonrpc.CodeInvalidRequest,
				message: fmt.Sprintf("invalid request: a message of %d bytes exceeds the %d-byte bound (server.max_message); it was discarded", dropped, g.max),
				id:      salvageID(line)})
		case errors.Is(err, bufio.ErrBufferFull):
			line = append(line, chunk...)
			continue
		default:
			line = append(line, chunk...)
			if serr := g.handle(line); serr != nil {
				return serr
			}
		}
		line = line[:0]
		if cap(line) > 1<<20 {
			line = nil // do not hold a large buffer between messages
		}
		if err != nil {
			return err
		}
	}
}

// discardLine skips the rest of the current line, returning how many bytes
// it skipped.
func discardLine(r *bufio.Reader) (int64, error) {
	var n int64
	for {
		chunk, err := r.ReadSlice('\n')
		n += int64(len(chunk))
		if !errors.Is(err, bufio.ErrBufferFull) {
			return n, err
		}
	}
}

// handle answers one line itself or hands it to the go-sdk. It returns an
// error only when the go-sdk's side is gone.
func (g *guard) handle(line []byte) error {
	if len(trimSpace(line)) == 0 {
		return nil // blank lines separate nothing; the go-sdk skips them too
	}
	calls, ref := inspect(line)
	if ref != nil {
		g.refuse(ref)
		return nil
	}
	if t := trimSpace(line); t[0] == '[' {
		// MCP has no batches since 2025-06-18, and the go-sdk cannot tell
		// which revision this connection negotiated through the guard's
		// wrapper: one line carrying thousands of calls is refused whole.
		g.refuse(invalidRequest(nil, "batches are not supported: send one JSON-RPC message per line"))
		return nil
	}
	if dup := g.begin(calls); dup != nil {
		g.refuse(dup)
		return nil
	}
	if line[len(line)-1] != '\n' {
		line = append(line, '\n') // the last line of the input may lack one
	}
	if _, err := g.sdk.Write(line); err != nil {
		g.end(calls)
		return err
	}
	return nil
}

// begin marks calls in flight, or refuses them all if any is already.
func (g *guard) begin(calls []call) *refusal {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range calls {
		if g.inFlight[c.key] {
			id := c.raw
			if len(calls) > 1 {
				id = nil // a batch is answered with one error
			}
			return invalidRequest(id, "id %s is already in use by a request that has not been answered yet", clip(c.raw))
		}
	}
	if len(g.inFlight)+len(calls) > g.pending {
		var id json.RawMessage
		if len(calls) == 1 {
			id = calls[0].raw
		}
		return &refusal{code: codeServerBusy, id: id, message: fmt.Sprintf(
			"server busy: %d requests of this connection are not answered yet (the limit); wait for replies before sending more", len(g.inFlight))}
	}
	for _, c := range calls {
		g.inFlight[c.key] = true
	}
	return nil
}

// codeServerBusy is the JSON-RPC error code of a request refused because
// its connection has too many requests in flight (an implementation-defined
// server error, -32000 to -32099).
const codeServerBusy = -32000

func (g *guard) end(calls []call) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range calls {
		delete(g.inFlight, c.key)
	}
}

// answered notes that the go-sdk is replying to the call with id.
func (g *guard) answered(id jsonrpc.ID) {
	if key, ok := keyOf(id); ok {
		g.mu.Lock()
		delete(g.inFlight, key)
		g.mu.Unlock()
	}
}

func (g *guard) refuse(r *refusal) {
	g.log.Warn("refused a client message", "code", r.code, "id", string(orNull(r.id)), "reason", r.message)
	if _, err := g.out.Write(append(r.response(), '\n')); err != nil {
		g.log.Warn("could not send the refusal", "error", err)
	}
}

func orNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return json.RawMessage("null")
	}
	return id
}

func trimSpace(b []byte) []byte {
	return b[skipSpace(b, 0):]
}

// guardedConnection is the go-sdk's connection with the guard's bookkeeping:
// a call leaves the in-flight set as its reply is written (before, so that a
// client reusing the id on seeing the reply is not refused).
type guardedConnection struct {
	mcp.Connection
	g *guard
}

func (c *guardedConnection) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.g.answered(resp.ID)
	}
	return c.Connection.Write(ctx, msg)
}
