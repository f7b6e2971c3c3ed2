//go:build unix

package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// TestMain lets the test binary act as a stdio server in a child process.
func TestMain(m *testing.M) {
	if os.Getenv("MCPSERVER_STDIO_CHILD") == "1" {
		stdioChild()
		return
	}
	os.Exit(m.Run())
}

// stdioChild serves a tool that writes to stdout in every way it can.
func stdioChild() {
	tools := newFakeTools(desc("noisy"))
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		fmt.Println("fmt.Println garbage")
		os.Stdout.WriteString("os.Stdout garbage\n")
		cmd := exec.Command("echo", "child process garbage")
		cmd.Stdout = os.Stdout
		cmd.Run()
		c.Observer.Log(slog.LevelInfo, "a guest log line")
		return &tool.Result{Content: []tool.Content{tool.TextContent("clean")}}, nil
	})
	s := New(tools, Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err := s.ServeStdio(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "ServeStdio:", err)
		os.Exit(1)
	}
	fmt.Println("after ServeStdio, stdout is stdout again")
}

func TestStdioCarriesOnlyProtocolBytes(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCPSERVER_STDIO_CHILD=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	// Record every byte of stdout while a real client talks over it.
	pr, pw, _ := os.Pipe()
	var stdout strings.Builder
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stdoutPipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			stdout.WriteString(sc.Text() + "\n")
			pw.Write(append(sc.Bytes(), '\n'))
		}
		pw.Close()
	}()

	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: pr, Writer: stdin}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "noisy"})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "clean" {
		t.Fatalf("call: %+v %v\nstderr:\n%s", res, err, stderr.String())
	}
	cs.Close()
	stdin.Close()
	<-copied
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\nstderr:\n%s", err, stderr.String())
	}

	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	for _, line := range lines[:len(lines)-1] {
		var msg map[string]any
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg["jsonrpc"] != "2.0" {
			t.Errorf("stdout line is not a JSON-RPC message: %q", line)
		}
	}
	if last := lines[len(lines)-1]; last != "after ServeStdio, stdout is stdout again" {
		t.Errorf("stdout was not restored after ServeStdio; last line %q", last)
	}
	if !strings.Contains(stdout.String(), `"a guest log line"`) {
		t.Errorf("the log notification did not reach the client")
	}
	for _, garbage := range []string{"fmt.Println garbage", "os.Stdout garbage", "child process garbage", "a guest log line"} {
		if !strings.Contains(stderr.String(), garbage) {
			t.Errorf("stderr lacks %q:\n%s", garbage, stderr.String())
		}
	}
}

// TestStdioAnswersRequestsReadBeforeEOF: a client that writes its requests
// and closes stdin at once (a shell pipeline) still gets every reply.
func TestStdioAnswersRequestsReadBeforeEOF(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "MCPSERVER_STDIO_CHILD=1")
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"noisy","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}, "\n") + "\n")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\nstderr:\n%s", err, stderr.String())
	}
	answered := map[float64]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		var msg struct {
			ID     *float64        `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &msg) == nil && msg.ID != nil && msg.Result != nil {
			answered[*msg.ID] = true
		}
	}
	for _, id := range []float64{1, 2, 3} {
		if !answered[id] {
			t.Errorf("request %v got no reply; stdout:\n%s", id, out)
		}
	}
}
