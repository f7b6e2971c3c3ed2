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

// Connect implements [mcp.Transport]. The connection it returns reads and
// checks lines on the go-sdk's own read loop, and hands over each message
// the check already decoded: no goroutine, pipe or second decode between
// the client's bytes and the go-sdk (RATIONALE.md, "The stdio call path").
func (t *GuardedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	max := t.MaxMessage
	if max <= 0 {
		max = DefaultMaxMessage
	}
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &guard{
		in:       t.Reader,
		r:        bufio.NewReaderSize(t.Reader, 64<<10),
		out:      &lockedWriter{w: t.Writer},
		max:      max,
		pending:  cmp.Or(t.MaxPending, DefaultMaxPending),
		log:      log,
		inFlight: make(map[string]bool),
	}, nil
}

// lockedWriter serializes whole messages: every reply and refusal is written
// with one Write, so replies never interleave.
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

// guard is the connection between the client's bytes and the go-sdk: it
// answers every line the go-sdk would choke on itself and passes the rest.
type guard struct {
	in      io.ReadCloser
	r       *bufio.Reader
	out     *lockedWriter
	max     int
	pending int
	log     *slog.Logger
	// readErr is the error that ended the input, returned once the
	// message read with it has been handed over (read loop only).
	readErr error

	mu       sync.Mutex
	inFlight map[string]bool // keys of calls handed to the go-sdk and not yet answered
	closed   bool
}

// Read implements [mcp.Connection]: the next message the guard lets
// through. The go-sdk calls it from one goroutine.
func (g *guard) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if g.readErr != nil {
			return nil, g.readErr
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := g.readLine()
		if err != nil {
			g.readErr = err
		}
		if line == nil {
			continue
		}
		if msg := g.admit(line); msg != nil {
			return msg, nil
		}
	}
}

// readLine returns the next line (nil when there is none to hand on: a
// line too long, refused here, or the end of the input, in which case err
// says so), holding at most g.max bytes of it.
//
// Each line is a new slice: the message decoded from it goes on to a
// handler goroutine while the next line is read, so no buffer is reused.
func (g *guard) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := g.r.ReadSlice('\n')
		switch {
		case len(line)+len(chunk) > g.max:
			// Too long: keep the start (the id may be there), drop the rest.
			keep := min(len(chunk), g.max-len(line))
			line = append(line, chunk[:keep]...)
			dropped := int64(len(line)) + int64(len(chunk)-keep)
			if errors.Is(err, bufio.ErrBufferFull) {
				n, derr := discardLine(g.r)
				dropped += n
				err = derr
			}
			if err == nil {
				dropped-- // the newline is not part of the message
			}
			g.refuse(&refusal{code: jsonrpc.CodeInvalidRequest,
				message: fmt.Sprintf("invalid request: a message of %d bytes exceeds the %d-byte bound (server.max_message); it was discarded", dropped, g.max),
				id:      salvageID(line)})
			return nil, err
		case errors.Is(err, bufio.ErrBufferFull):
			line = append(line, chunk...)
			continue
		default:
			line = append(line, chunk...)
			if len(line) == 0 {
				return nil, err
			}
			return line, err
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

// admit answers one line itself (nil) or returns the message to hand to
// the go-sdk, its call marked in flight.
func (g *guard) admit(line []byte) jsonrpc.Message {
	if len(trimSpace(line)) == 0 {
		return nil // blank lines separate nothing; the go-sdk skips them too
	}
	msg, c, ref := inspectMessage(line)
	if ref != nil {
		g.refuse(ref)
		return nil
	}
	if c != nil {
		if dup := g.begin([]call{*c}); dup != nil {
			g.refuse(dup)
			return nil
		}
	}
	return msg
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

// Write implements [mcp.Connection]. A call leaves the in-flight set as its
// reply is written (before, so that a client reusing the id on seeing the
// reply is not refused).
func (g *guard) Write(_ context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		g.answered(resp.ID)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message for the client: %w", err)
	}
	_, err = g.out.Write(append(data, '\n'))
	return err
}

// Close implements [mcp.Connection]: it closes the client's input, which
// ends a Read in progress, and the output.
func (g *guard) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	err := g.in.Close()
	if cerr := g.out.Close(); err == nil {
		err = cerr
	}
	return err
}

// SessionID implements [mcp.Connection]: stdio has no session id.
func (g *guard) SessionID() string { return "" }
