package mcpserver

import (
	"context"
	"fmt"
	"io"
	"os"

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
// stream. On platforms without dup2 the redirection is skipped.
func (s *Server) ServeStdio(ctx context.Context) error {
	out, restore, err := isolateStdout()
	if err != nil {
		return fmt.Errorf("serve stdio: %w", err)
	}
	defer restore()
	return s.Serve(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: nopCloser{out}})
}

// nopCloser keeps the session's end from closing the protocol's stdout: the
// restore function owns it.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
