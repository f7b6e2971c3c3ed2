package memory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const crashDirEnv = "WARDEN_MEMORY_CRASH_DIR"

var crashTopics = []string{"big", "nested/deep/big", "other"}

// crashValues are the only values the crash writer ever writes: distinct
// sizes and contents, so a torn or mixed file matches none of them.
func crashValues() []string {
	var values []string
	for i, size := range []int{1, 64 << 10, 700 << 10, 2 << 20} {
		var b strings.Builder
		for b.Len() < size {
			fmt.Fprintf(&b, "value %d line %08d\n", i, b.Len())
		}
		values = append(values, b.String()[:size])
	}
	return values
}

// TestCrashChild is the writer that TestKillDuringWrites runs in a
// subprocess and kills; run directly it does nothing.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("only runs as TestKillDuringWrites' subprocess")
	}
	m, err := New(Config{ProjectRoot: dir, MaxValueBytes: 4 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Encode every request up front so that the loop spends its time
	// writing, where the kills should land.
	var requests [][]byte
	for _, topic := range crashTopics {
		for _, v := range crashValues() {
			raw, _ := json.Marshal(req{"op": "set", "topic": topic, "value": v})
			requests = append(requests, raw)
		}
	}
	for i := 0; ; i++ {
		raw := requests[(i%len(crashTopics))*len(requests)/len(crashTopics)+rand.IntN(len(requests)/len(crashTopics))]
		if _, err := m.Serve(t.Context(), rw, raw); err != nil {
			t.Fatal(err)
		}
		if i == len(crashTopics)-1 {
			fmt.Println("ready")
		}
	}
}

// TestKillDuringWrites kills a writer with SIGKILL at random instants and
// checks that every memory is always one complete value.
func TestKillDuringWrites(t *testing.T) {
	dir := t.TempDir()
	values := crashValues()
	complete := map[string]bool{}
	for _, v := range values {
		complete[v] = true
	}
	// Kill at random instants until enough kills have landed inside a
	// write (a temp file is left), which about a third of them do.
	const minRounds, maxRounds, minMidWrite = 8, 60, 3
	midWrite := 0
	for round := range maxRounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: writer said %q (%v); stderr: %s", round, line, err, stderr.String())
		}
		time.Sleep(time.Duration(rand.IntN(40_000)) * time.Microsecond)
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		cmd.Wait()

		for _, topic := range crashTopics {
			data, err := os.ReadFile(filepath.Join(dir, ".warden", "memories", topic+".md"))
			if err != nil {
				t.Fatalf("round %d: %s: %v", round, topic, err)
			}
			if !complete[string(data)] {
				t.Fatalf("round %d: %s holds %d bytes that are no complete value", round, topic, len(data))
			}
		}
		if len(tempFiles(dir)) > 0 {
			midWrite++
		}
		if round+1 >= minRounds && midWrite >= minMidWrite {
			t.Logf("%d of %d kills landed mid-write (left a temp file)", midWrite, round+1)
			break
		}
	}
	if midWrite < minMidWrite {
		t.Fatalf("only %d kills landed mid-write; the test proved too little", midWrite)
	}

	// The dead writers' lock is gone, their temp files are swept by the
	// next writer, and the store works.
	m, err := New(Config{ProjectRoot: dir, MaxValueBytes: 4 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range crashTopics {
		if _, err := m.Serve(t.Context(), rw, fmt.Appendf(nil, `{"op":"set","topic":%q,"value":"done"}`, topic)); err != nil {
			t.Fatalf("after the kills: %v", err)
		}
	}
	if temps := tempFiles(dir); len(temps) > 0 {
		t.Fatalf("temp files survived the next writes: %q", temps)
	}
	out, err := m.Serve(t.Context(), rw, []byte(`{"op":"list"}`))
	if err != nil || len(out.(listReply).Topics) != len(crashTopics) {
		t.Fatalf("list after the kills: %v %v", out, err)
	}
}

// tempFiles lists the store's temp files below dir.
func tempFiles(dir string) []string {
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
			names = append(names, p)
		}
		return nil
	})
	return names
}
