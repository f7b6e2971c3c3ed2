package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/warden-run/warden/tool"
)

// BenchmarkStdioCall is one stdio tools/call of an echo tool that answers
// at once with a text block and structured content, as the bundled echo
// does: the request written on the session's stdin, the reply read from
// its stdout, both in-process pipes. It measures warden's own stdio path
// (the guard, the fast path, the handler chain, the warm stacks, the
// reply's encoding) without the sandbox, whose share the runtime's
// benchmarks measure (BenchmarkEchoWarm); allocs/op is exact on a busy
// machine where the times are not, and cpu-ns/op (the process's CPU time,
// the client's included) steadier than ns/op.
//
//	go test ./mcpserver -run '^$' -bench StdioCall -benchtime 20000x -count 6
func BenchmarkStdioCall(b *testing.B) {
	tools := newFakeTools(desc("echo"))
	tools.setCall(func(_ context.Context, c Call) (*tool.Result, error) {
		var args struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			return nil, err
		}
		structured, _ := json.Marshal(args)
		return &tool.Result{Content: []tool.Content{tool.TextContent(args.Text)}, StructuredContent: structured}, nil
	})
	s := New(tools, Options{Logger: slog.New(slog.DiscardHandler)})
	defer s.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	fast := &fastTransport{}
	go func() { done <- s.serveStdio(ctx, inR, outW, fast) }()
	defer func() {
		inW.Close()
		cancel()
		<-done
	}()
	out := bufio.NewReader(outR)
	call := func(line string) string {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			b.Fatal(err)
		}
		for {
			reply, err := out.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if !strings.Contains(reply, `"method":"notifications/`) {
				return reply
			}
		}
	}
	if reply := call(initLine); !strings.Contains(reply, `"id":"init"`) {
		b.Fatalf("initialize: %s", reply)
	}
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	i := 0
	echo := func() {
		i++
		id := strconv.Itoa(i)
		reply := call(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello ` + id + `"}}}`)
		if !strings.Contains(reply, `"id":`+id+`,`) || !strings.Contains(reply, `"structuredContent":{"text":"hello `+id+`"}`) {
			b.Fatalf("call %s: %s", id, reply)
		}
	}
	for range 200 { // warm: the fast path starts once the initialize reply is out
		echo()
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for b.Loop() {
		echo()
	}
	b.StopTimer()
	if end := processCPU(); cpu >= 0 && end >= 0 {
		// The client's share included: the same on both sides of a
		// comparison, and steadier than the time on a busy machine.
		b.ReportMetric(float64(end-cpu)/float64(b.N), "cpu-ns/op")
	}
	if fast.taken.Load() == 0 {
		b.Fatal("no call took the fast path")
	}
}
