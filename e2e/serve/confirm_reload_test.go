package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConfirmedCallRefusedWhenConfigChangedMeanwhile: the real binary over
// stdio (a 2025-11-25 session, the confirmation a server request answered
// in place). While the person reads the confirmation of a hostcalls write,
// whose question says it holds fs.write=out, the owner revokes that grant
// and the server applies the change. The person accepts what they were
// shown; the call does not run with the grant config no longer gives: it is
// refused, out/ stays empty, and the next call is asked again and runs with
// what config grants now (nothing: the write is denied). The session still
// serves.
func TestConfirmedCallRefusedWhenConfigChangedMeanwhile(t *testing.T) {
	e := personEnv(t, "2m")
	const grant = "    hostcalls:\n      fs: {write: [out]}   # no read grant: reads are put to the person\n"
	original := personConfig(e, "2m")
	if !strings.Contains(original, grant) {
		t.Fatal("bad test: personConfig no longer grants hostcalls fs.write this way")
	}
	revoked := strings.Replace(original, grant, "    hostcalls: {}\n", 1)
	var (
		logs       *logBuffer
		mu         sync.Mutex
		confirms   int
		handlerErr error
	)
	revokeThenAccept := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if !strings.Contains(req.Params.Message, "run tool hostcalls") {
			return &mcp.ElicitResult{Action: "decline"}, nil // a permission prompt: denied
		}
		mu.Lock()
		defer mu.Unlock()
		if confirms++; confirms > 1 {
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		// The owner revokes while the person reads; the answer comes once
		// the server has applied it.
		before := strings.Count(logs.String(), "config reloaded")
		if handlerErr = os.WriteFile(e.config, []byte(revoked), 0o644); handlerErr != nil {
			return nil, handlerErr
		}
		for deadline := time.Now().Add(30 * time.Second); strings.Count(logs.String(), "config reloaded") <= before; {
			if time.Now().After(deadline) {
				handlerErr = errors.New("the server never applied the revoke")
				return nil, handlerErr
			}
			time.Sleep(10 * time.Millisecond) // polling for the reload, not ordering
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	cs, stderr := stdioServer(t, e, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: revokeThenAccept})
	logs = stderr
	out := filepath.Join(e.dir, "out", "x.txt")
	write := hostcallsArgs(map[string]any{"op": "write", "path": "out/x.txt", "content": "x"})

	res := call(t, cs, "hostcalls", write)
	mu.Lock()
	err := handlerErr
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	wantFailure(t, res, "denied")
	if !strings.Contains(dump(res), "config changed while a person was asked to confirm hostcalls") {
		t.Fatalf("the refusal does not say why: %s", dump(res))
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a call confirmed under a revoked grant wrote %s (%v)", out, err)
	}
	// Asked again under the config in force: it runs, and the write is
	// denied (no grant; the person declines the permission prompt).
	got := hostcallsFS(t, call(t, cs, "hostcalls", write))
	if got.FS.Error == nil || got.FS.Error.Kind != "denied" {
		t.Fatalf("the write after the revoke: %+v", got.FS)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the write after the revoke wrote %s (%v)", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if confirms != 2 {
		t.Fatalf("confirmations asked: %d, want 2 (the refused call, the next one)", confirms)
	}
	wantEcho(t, cs, "still serving")
}
