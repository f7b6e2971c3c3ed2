package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one client over the process's stdin and stdout until the
// client closes stdin or ctx ends.
//
// Stdout carries protocol messages and nothing else: for as long as
// ServeStdio runs, file descriptor 1 is pointed at stderr and the protocol
// writes to a private duplicate of the original stdout. Whatever else in the
// process writes to stdout (a library's fmt.Println, a panic handler, a
// child process inheriting fd 1) lands on stderr instead of corrupting the
// stream. On Windows the standard output handle and os.Stdout are swapped
// instead (stdio_windows.go); elsewhere without dup2 it is skipped.
//
// No line of input ends the session: see [GuardedTransport]; nor does a
// message that cannot be encoded (see encodingSafeTransport).
func (s *Server) ServeStdio(ctx context.Context) error {
	out, restore, err := isolateStdout()
	if err != nil {
		return fmt.Errorf("serve stdio: %w", err)
	}
	defer restore()
	return s.serveStdio(ctx, os.Stdin, nopCloser{out}, &fastTransport{})
}

// serveStdio serves one client over r and w as ServeStdio does, with the
// fast path for plain tools/calls (stdiofast.go) over fast, or without it
// when fast is nil.
func (s *Server) serveStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser, fast *fastTransport) error {
	var t mcp.Transport = &encodingSafeTransport{log: s.log, Transport: &GuardedTransport{
		Reader:     r,
		Writer:     w,
		MaxMessage: s.opts.MaxMessage,
		Logger:     s.log,
	}}
	// The task protocol outermost: the requests it answers count as
	// unanswered for the drain too. The fast path reads first and takes
	// only plain calls, never one that asks for a task (and none while a
	// tool requires tasks: see fastConnection.take).
	if fast == nil {
		return s.Serve(ctx, &taskTransport{s: s, Transport: &drainTransport{Transport: t}})
	}
	fast.Transport, fast.s = t, s
	return s.serveFast(ctx, &taskTransport{s: s, Transport: &drainTransport{Transport: fast}}, fast)
}

// maxDrain bounds how long a stdio session whose input ended waits for the
// replies to the requests it already read.
const maxDrain = time.Minute

// drainTransport keeps a connection whose input has ended open until every
// request read from it has been answered (at most maxDrain). Without it, a
// client that writes its requests and closes stdin at once, as a shell
// pipeline does, would lose every reply still being computed.
type drainTransport struct{ mcp.Transport }

func (t *drainTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainConnection{Connection: c}, nil
}

type drainConnection struct {
	mcp.Connection
	pending atomic.Int64 // requests read and not yet answered
}

func (c *drainConnection) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
			c.pending.Add(1)
		}
		return msg, nil
	}
	if errors.Is(err, io.EOF) {
		deadline := time.NewTimer(maxDrain)
		defer deadline.Stop()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for c.pending.Load() > 0 {
			select {
			case <-ctx.Done():
				return nil, err
			case <-deadline.C:
				return nil, err
			case <-tick.C:
			}
		}
	}
	return nil, err
}

func (c *drainConnection) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.pending.Add(-1)
	}
	return err
}

// nopCloser keeps the session's end from closing the protocol's stdout: the
// restore function owns it.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
