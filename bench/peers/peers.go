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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A server is one peer: a command that serves the echo tool over stdio.
type server struct {
	name string
	cmd  []string
	env  []string // added to the harness's environment
}

// A run is one server's measured calls of one round.
type run struct {
	server    string
	round     int
	latencies []time.Duration // one per measured call, in call order
	cpu       time.Duration   // the server process's CPU time over the measured calls
}

func (r run) percentile(p float64) time.Duration {
	s := slices.Clone(r.latencies)
	slices.Sort(s)
	i := int(p * float64(len(s)-1))
	return s[i]
}

func (r run) cpuPerCall() time.Duration { return r.cpu / time.Duration(len(r.latencies)) }

// measure starts s, does the MCP initialize handshake, makes warmup calls of
// echo, then calls measured ones, one at a time, each answer checked; then
// it closes the server's stdin and waits for it to exit. A server that
// answers nothing for timeout is killed and the run fails (see watch).
func measure(s server, round, warmup, calls int, timeout time.Duration) (r run, err error) {
	cmd := exec.Command(s.cmd[0], s.cmd[1:]...)
	cmd.Env = append(os.Environ(), s.env...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return r, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	if err := cmd.Start(); err != nil {
		return r, fmt.Errorf("%s: %w", s.name, err)
	}
	defer func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if err != nil {
			err = fmt.Errorf("%s: %w\nits stderr:\n%s", s.name, err, stderr.String())
		}
	}()
	c := &client{in: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
	stopWatch := watch(cmd.Process, &c.lines, timeout)
	defer func() {
		if stopWatch() && err != nil {
			err = fmt.Errorf("%w (it wrote nothing for %s, so it was killed as hung)", err, timeout)
		}
	}()
	if err := c.initialize(); err != nil {
		return r, err
	}
	for i := 1; i <= warmup; i++ {
		if _, err := c.call(i); err != nil {
			return r, fmt.Errorf("warm-up %w", err)
		}
	}
	r = run{server: s.name, round: round, latencies: make([]time.Duration, calls)}
	cpu0, err := processCPU(cmd.Process.Pid)
	if err != nil {
		return r, err
	}
	for i := range calls {
		if r.latencies[i], err = c.call(warmup + 1 + i); err != nil {
			return r, err
		}
	}
	cpu1, err := processCPU(cmd.Process.Pid)
	if err != nil {
		return r, err
	}
	r.cpu = cpu1 - cpu0
	return r, nil
}

// client is the raw client: newline-delimited JSON-RPC written to the
// server's stdin, no SDK, so that every server is measured through the
// same few lines.
type client struct {
	in    io.Writer
	out   *bufio.Reader
	lines atomic.Int64 // lines read so far, for watch
}

// watch kills proc once lines has not moved for a whole period of timeout,
// so that a peer that stops answering fails the run instead of blocking it
// for ever: the kill closes its stdout, which ends the client's read. It
// costs the measured calls nothing but the count. stop ends the watch and
// reports whether it killed proc.
func watch(proc *os.Process, lines *atomic.Int64, timeout time.Duration) (stop func() (killed bool)) {
	done, ended := make(chan struct{}), make(chan struct{})
	var killed atomic.Bool
	go func() {
		defer close(ended)
		tick := time.NewTicker(timeout)
		defer tick.Stop()
		last := lines.Load()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if now := lines.Load(); now != last {
				last = now
				continue
			}
			killed.Store(true)
			proc.Kill()
			return
		}
	}()
	return func() bool {
		close(done)
		<-ended
		return killed.Load()
	}
}

// message is what the client reads of a server's line.
type message struct {
	ID     *int64          `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *client) initialize() error {
	if _, err := c.roundTrip(0, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"peers","version":"1"}}}`+"\n")); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	_, err := io.WriteString(c.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return err
}

// call calls echo with the text "hello ID" and checks that the answer is
// that text; it returns the time from the first byte written to the
// answer's last byte read.
func (c *client) call(id int) (time.Duration, error) {
	req := strconv.AppendInt([]byte(`{"jsonrpc":"2.0","id":`), int64(id), 10)
	req = append(req, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello `...)
	req = strconv.AppendInt(req, int64(id), 10)
	req = append(req, "\"}}}\n"...)
	start := time.Now()
	result, err := c.roundTrip(id, req)
	elapsed := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("call %d: %w", id, err)
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		return 0, fmt.Errorf("call %d: result %s: %w", id, result, err)
	}
	want := "hello " + strconv.Itoa(id)
	if res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != want {
		return 0, fmt.Errorf("call %d: result %s, want the text %q", id, result, want)
	}
	return elapsed, nil
}

// roundTrip writes req and reads lines until the answer to id, skipping
// notifications; it returns the answer's result.
func (c *client) roundTrip(id int, req []byte) (json.RawMessage, error) {
	if _, err := c.in.Write(req); err != nil {
		return nil, err
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("the server closed its stdout")
			}
			return nil, err
		}
		c.lines.Add(1)
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("answer %q: %w", line, err)
		}
		switch {
		case m.Method != "" && m.ID == nil:
			continue // a notification (a log line, a list change)
		case m.Method != "":
			return nil, fmt.Errorf("the server sent a request: %s", bytes.TrimSpace(line))
		case m.ID == nil || *m.ID != int64(id):
			return nil, fmt.Errorf("answer %s, want id %d", bytes.TrimSpace(line), id)
		case m.Error != nil:
			return nil, fmt.Errorf("error %d: %s", m.Error.Code, m.Error.Message)
		}
		return m.Result, nil
	}
}

// processCPU is the CPU time (user and system) that the threads of process
// pid have run so far: the sum of the first field of each thread's
// /proc/PID/task/TID/schedstat, in nanoseconds, where /proc/PID/stat counts
// in clock ticks (10 ms, too coarse for a few thousand calls of 30 µs).
// A thread that exits meanwhile takes its time with it; the servers' threads
// live as long as they do.
func processCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("the CPU time of process %d: no /proc/%d/task/*/schedstat", pid, pid)
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited meanwhile
		}
		if err != nil {
			return 0, err
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("%s: empty", t)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", t, err)
		}
		total += time.Duration(ns)
	}
	return total, nil
}

// lockedBuffer is a server's stderr, written by exec's copying goroutine
// and read on failure.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 {
		return len(p), nil // enough to say what went wrong
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
