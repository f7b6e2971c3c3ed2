package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary act as a server that answers wrongly
// (PEERS_TEST_SERVER names how), to show that the harness checks answers.
func TestMain(m *testing.M) {
	switch mode := os.Getenv("PEERS_TEST_SERVER"); mode {
	case "":
	case "hang":
		io.Copy(io.Discard, os.Stdin) // reads every request, answers none
		return
	default:
		wrongServer(mode)
		return
	}
	os.Exit(m.Run())
}

// wrongServer answers initialize and echo calls, except call 2: with the
// text "wrong" (mode "text") or with id 7 (mode "id").
func wrongServer(mode string) {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req struct {
			ID     *int   `json:"id"`
			Method string `json:"method"`
			Params struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		id, text := *req.ID, req.Params.Arguments.Text
		if id == 2 && mode == "text" {
			text = "wrong"
		}
		if id == 2 && mode == "id" {
			id = 7
		}
		if req.Method == "initialize" {
			fmt.Printf(`{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"wrong","version":"1"}}}`+"\n", id)
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"skipped"}}`+"\n"+
			`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%q}]}}`+"\n", id, text)
	}
}

func TestWrongAnswersFail(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[string]string{
		"text": `round 1: wrong: call 2: result {"content":[{"type":"text","text":"wrong"}]}, want the text "hello 2"`,
		"id":   `round 1: wrong: call 2: answer {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello 2"}]}}, want id 2`,
	} {
		t.Run(mode, func(t *testing.T) {
			s := server{name: "wrong", cmd: []string{self}, env: []string{"PEERS_TEST_SERVER=" + mode}}
			_, err := runRounds([]server{s}, 1, 1, 3, time.Minute, io.Discard)
			if err == nil {
				t.Fatal("no error")
			}
			if got, _, _ := strings.Cut(err.Error(), "\n"); got != want {
				t.Fatalf("error\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestHungServerFails runs the harness against a server that reads every
// request and answers none: the run fails, naming the server, the request
// and the hang, instead of waiting for ever. The server never answers at
// all, so the message does not depend on how fast it starts.
func TestHungServerFails(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := server{name: "mute", cmd: []string{self}, env: []string{"PEERS_TEST_SERVER=hang"}}
	_, err = runRounds([]server{s}, 1, 1, 3, 50*time.Millisecond, io.Discard)
	if err == nil {
		t.Fatal("no error")
	}
	want := "the first start: mute: initialize: the server closed its stdout (it wrote nothing for 50ms, so it was killed as hung)"
	if got, _, _ := strings.Cut(err.Error(), "\n"); got != want {
		t.Fatalf("error\n%s\nwant\n%s", got, want)
	}
}

// TestFloorAndWarden runs the harness, two short rounds, against the floor
// and the real warden serving the bundled echo tool: every call answered
// and checked, the runs in round order, and the table and benchmark lines
// naming both. WARDEN_BIN picks the warden binary (default: ./cmd/warden
// built here).
func TestFloorAndWarden(t *testing.T) {
	if testing.Short() {
		t.Skip("builds warden and its echo tool")
	}
	dir := t.TempDir()
	floor := filepath.Join(dir, "floor")
	goBuild(t, ".", nil, "-o", floor, "./servers/floor")
	warden := os.Getenv("WARDEN_BIN")
	if warden == "" {
		warden = filepath.Join(dir, "warden")
		goBuild(t, "../..", nil, "-o", warden, "./cmd/warden")
	}
	tools := filepath.Join(dir, "tools")
	goBuild(t, "../..", []string{"GOOS=wasip1", "GOARCH=wasm"}, "-buildmode=c-shared", "-o", filepath.Join(tools, "echo.wasm"), "./tools-wasm/echo")
	w, err := wardenServer(dir, warden, filepath.Join(tools, "echo.wasm"), "")
	if err != nil {
		t.Fatal(err)
	}
	servers := []server{w, {name: "floor", cmd: []string{floor}}}
	const calls = 20
	runs, err := runRounds(servers, 2, 3, calls, time.Minute, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range runs {
		order = append(order, fmt.Sprintf("%s/%d", r.server, r.round))
		if len(r.latencies) != calls {
			t.Errorf("%s round %d: %d latencies, want %d", r.server, r.round, len(r.latencies), calls)
		}
		for i, l := range r.latencies {
			if l <= 0 {
				t.Errorf("%s round %d call %d: latency %v", r.server, r.round, i, l)
			}
		}
		if r.cpu <= 0 {
			t.Errorf("%s round %d: server CPU %v, want some", r.server, r.round, r.cpu)
		}
	}
	if got, want := strings.Join(order, " "), "warden/1 floor/1 warden/2 floor/2"; got != want {
		t.Errorf("runs %s, want %s", got, want)
	}
	var table, bench bytes.Buffer
	writeTable(&table, servers, runs)
	writeBench(&bench, runs)
	for _, name := range []string{"warden", "floor"} {
		if !strings.Contains(table.String(), name) {
			t.Errorf("table without %s:\n%s", name, table.String())
		}
		if n := strings.Count(bench.String(), "BenchmarkPeers/server="+name+"\t20\t"); n != 2 {
			t.Errorf("%d benchmark lines of %s, want 2:\n%s", n, name, bench.String())
		}
	}
}

func goBuild(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOTOOLCHAIN=local"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// FuzzCall feeds arbitrary bytes to the client as a server's stdout: it
// never panics or hangs, and it accepts an answer only if it holds the
// text it asked for.
func FuzzCall(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hello 3"}]}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/message"}` + "\n" + `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hello 3"}],"isError":false}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":4,"result":{}}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"roots/list"}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}` + "\n"))
	f.Add([]byte(`{"id":3,"result":null}` + "\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		c := &client{in: io.Discard, out: bufio.NewReader(bytes.NewReader(out))}
		if _, err := c.call(3); err == nil && !answers(out, 3, "hello 3") {
			t.Fatalf("accepted %q", out)
		}
	})
}

// answers reports whether a line of out, decoded apart from the client's
// code, is the answer to id with text as its one content.
func answers(out []byte, id float64, text string) bool {
	for line := range bytes.Lines(out) {
		var m struct {
			ID     any `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal(line, &m) == nil && m.ID == id && len(m.Result.Content) == 1 && m.Result.Content[0].Text == text {
			return true
		}
	}
	return false
}

// TestFlagsNoRunCanBeMadeOf checks that the flags no run can be made of
// are refused with the flag named, by the binary itself before it starts
// anything: a -timeout that is not positive made the hang watch's ticker
// panic.
func TestFlagsNoRunCanBeMadeOf(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := server{name: "never", cmd: []string{self}, env: []string{"PEERS_TEST_SERVER=hang"}}
	for _, c := range []struct {
		rounds, warmup, calls int
		timeout               time.Duration
		want                  string
	}{
		{1, 1, 3, 0, "-timeout 0s: want a positive duration (how long a server may write nothing before it is killed as hung)"},
		{1, 1, 3, -time.Second, "-timeout -1s: want a positive duration (how long a server may write nothing before it is killed as hung)"},
		{0, 1, 3, time.Minute, "-rounds 0: want at least 1"},
		{1, 1, 0, time.Minute, "-calls 0: want at least 1"},
		{1, -1, 3, time.Minute, "-warmup -1: want 0 or more"},
	} {
		if _, err := runRounds([]server{s}, c.rounds, c.warmup, c.calls, c.timeout, io.Discard); err == nil || err.Error() != c.want {
			t.Errorf("runRounds(%d, %d, %d, %s): %v, want %q", c.rounds, c.warmup, c.calls, c.timeout, err, c.want)
		}
	}
	// The binary: the same refusal, before any server is named.
	bin := filepath.Join(t.TempDir(), "peers")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "-timeout", "0").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("peers -timeout 0: %v, want exit status 1\n%s", err, out)
	}
	if want := "peers: -timeout 0s: want a positive duration (how long a server may write nothing before it is killed as hung)\n"; string(out) != want {
		t.Fatalf("peers -timeout 0 wrote\n%s\nwant\n%s", out, want)
	}
}
