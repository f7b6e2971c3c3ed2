package serve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// replica is one `warden serve --http` of a replica set; unlike startServe's
// server it may be killed, and then its cleanup expects the kill.
type replica struct {
	*httpServer
	killed atomic.Bool
}

// startReplica starts `warden serve --http` for e with extra environment
// (the shared backend and key) and waits until every module has loaded.
func startReplica(t *testing.T, e *env, extraEnv ...string) *replica {
	t.Helper()
	r := &replica{httpServer: &httpServer{addr: freeAddr(t), stderr: &logBuffer{}, exited: make(chan struct{})}}
	dumpOnFailure(t, "replica "+r.addr, r.stderr)
	r.cmd = exec.Command(built.warden, "serve", "--config", e.config, "--http="+r.addr)
	r.cmd.Env = childEnv(extraEnv...)
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		if r.killed.Load() {
			return
		}
		r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
			if r.err != nil {
				t.Errorf("replica %s exited with %v after SIGTERM", r.addr, r.err)
			}
		case <-time.After(30 * time.Second):
			r.cmd.Process.Kill()
			<-r.exited
			t.Errorf("replica %s still running 30 s after SIGTERM; killed", r.addr)
		}
	})
	eventually(t, "replica "+r.addr+" answers /healthz", func() bool {
		select {
		case <-r.exited:
			t.Fatalf("replica %s exited before serving: %v", r.addr, r.err)
		default:
		}
		resp, err := http.Get("http://" + r.addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := newClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.url()}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", r.url(), err)
	}
	defer cs.Close()
	waitLoaded(t, cs)
	return r
}

// kill ends the replica with SIGKILL, as a crash would, and waits for it.
func (r *replica) kill(t *testing.T) {
	r.killed.Store(true)
	if err := r.cmd.Process.Kill(); err != nil {
		t.Errorf("kill -9 replica %s: %v", r.addr, err)
	}
	<-r.exited
}

// roundRobin is a reverse proxy sending each request to the next replica
// not marked down, as a load balancer without session affinity does.
type roundRobin struct {
	replicas []*replica
	next     atomic.Uint64
}

func (p *roundRobin) rewrite(pr *httputil.ProxyRequest) {
	for range len(p.replicas) {
		r := p.replicas[p.next.Add(1)%uint64(len(p.replicas))]
		if !r.killed.Load() {
			pr.SetURL(&url.URL{Scheme: "http", Host: r.addr})
			return
		}
	}
	panic("every replica is down")
}

// memoryCall sends one memory request through the hostcalls fixture and
// returns the capability's reply (or its error).
func memoryCall(ctx context.Context, cs *mcp.ClientSession, request map[string]any) (json.RawMessage, *tool.Error, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: map[string]any{"memory": request}})
	if err != nil {
		return nil, nil, err
	}
	if res.IsError {
		return nil, nil, fmt.Errorf("hostcalls failed: %v", res.Content)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, nil, err
	}
	var out struct {
		Memory struct {
			Result json.RawMessage `json:"result"`
			Error  *tool.Error     `json:"error"`
		} `json:"memory"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, nil, fmt.Errorf("hostcalls reply %s: %w", raw, err)
	}
	return out.Memory.Result, out.Memory.Error, nil
}

// TestReplicasShareMemory: three `warden serve --http` on one PostgreSQL
// behind a round-robin proxy, 16 stateless (2026-07-28) clients appending to
// and reading memory through the hostcalls tool, so that consecutive calls
// of one client land on different replicas. After an exact number of
// acknowledged writes one replica is killed with SIGKILL and the proxy skips
// it. No acknowledged write is lost, and each client's reads, on whichever
// replica, see every write it was told succeeded.
func TestReplicasShareMemory(t *testing.T) {
	dbURL := pg.DB(t)
	t.Parallel()
	e := newEnv(t, "", "hostcalls", "pager")
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(cfg), "    hostcalls: {}\n", "    hostcalls: {memory: read-write}\n", 1) + "security:\n  prompts: off\n"
	if err := os.WriteFile(e.config, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	key := base64.StdEncoding.EncodeToString([]byte("replicas-share-this-32-byte-key!"))
	extra := []string{"WARDEN_MEMORY_BACKEND=" + dbURL, "WARDEN_SERVER_STATE_KEY=" + key}

	// Started one after another: each migrates (or finds migrated) the
	// schema; TestPostgresConcurrentStartsMigrateOnce covers racing starts.
	p := &roundRobin{}
	for range 3 {
		p.replicas = append(p.replicas, startReplica(t, e, extra...))
	}
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: p.rewrite, FlushInterval: -1})
	defer proxy.Close()

	const clients, writes = 16, 12
	const killAfter = clients * writes / 3 // acknowledged writes before the kill
	victim := p.replicas[1]
	var acked atomic.Int64
	var killOnce sync.Once
	connect := func() (*mcp.ClientSession, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return newClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: proxy.URL + "/mcp"},
			&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	}
	// ackedBy[c] are client c's acknowledged appends, in order.
	ackedBy := make([][]string, clients)
	var retries atomic.Int64
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			cs, err := connect()
			if err != nil {
				t.Errorf("client %d: connect: %v", c, err)
				return
			}
			defer func() { cs.Close() }()
			topic := fmt.Sprintf("clients/%02d", c)
			// do retries a request that failed in transport (the victim
			// died under it) on a fresh connection, which the proxy sends
			// to a live replica. An append retried may land twice; an
			// acknowledged one must land.
			do := func(req map[string]any) (json.RawMessage, *tool.Error) {
				for attempt := 0; ; attempt++ {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					res, toolErr, err := memoryCall(ctx, cs, req)
					cancel()
					if err == nil {
						return res, toolErr
					}
					if attempt == 3 {
						t.Errorf("client %d: %v: %v", c, req, err)
						return nil, nil
					}
					retries.Add(1)
					cs.Close()
					if cs, err = connect(); err != nil {
						t.Errorf("client %d: reconnect: %v", c, err)
						return nil, nil
					}
				}
			}
			for w := range writes {
				entry := fmt.Sprintf("%02d.%02d;", c, w)
				res, toolErr := do(map[string]any{"op": "append", "topic": topic, "value": entry})
				if toolErr != nil || res == nil {
					t.Errorf("client %d: append %s: %v", c, entry, toolErr)
					return
				}
				ackedBy[c] = append(ackedBy[c], entry)
				if acked.Add(1) == killAfter {
					killOnce.Do(func() { victim.kill(t) })
				}
				// Read back, most likely on another replica than the write.
				res, toolErr = do(map[string]any{"op": "get", "topic": topic})
				if toolErr != nil || res == nil {
					t.Errorf("client %d: get after %s: %v", c, entry, toolErr)
					return
				}
				var got struct{ Value string }
				json.Unmarshal(res, &got)
				if missing := missingEntries(got.Value, ackedBy[c]); len(missing) > 0 {
					t.Errorf("client %d: read after %s misses acknowledged %q (value %q)", c, entry, missing, got.Value)
					return
				}
			}
		})
	}
	wg.Wait()
	if !victim.killed.Load() {
		t.Fatalf("the victim was never killed: %d writes acknowledged, kill point %d", acked.Load(), killAfter)
	}
	t.Logf("%d writes acknowledged, replica %s killed after %d, %d requests retried", acked.Load(), victim.addr, killAfter, retries.Load())

	// A cursor minted by one replica is accepted by the others: they share
	// server.state_key.
	first := p.replicas[0].connect(t, "2026-07-28", nil, nil)
	page1 := call(t, first, "pager", map[string]any{})
	next, _ := page1.Meta["warden/nextCursor"].(string)
	if text(t, page1) != "page 1" || next == "" {
		t.Fatalf("pager page 1: %q, next cursor %q", text(t, page1), next)
	}
	for _, r := range []*replica{p.replicas[0], p.replicas[2]} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := r.connect(t, "2026-07-28", nil, nil).CallTool(ctx, &mcp.CallToolParams{Name: "pager", Arguments: map[string]any{},
			Meta: mcp.Meta{"warden/cursor": next}})
		cancel()
		if err != nil || res.IsError || text(t, res) != "page 2" {
			t.Fatalf("replica %s continuing replica %s's cursor: %v %v", r.addr, p.replicas[0].addr, err, res)
		}
	}

	// Every acknowledged write is there, read on each surviving replica.
	for _, r := range p.replicas {
		if r.killed.Load() {
			continue
		}
		cs := r.connect(t, "2026-07-28", nil, nil)
		for c := range clients {
			res, toolErr, err := memoryCall(t.Context(), cs, map[string]any{"op": "get", "topic": fmt.Sprintf("clients/%02d", c)})
			if err != nil || toolErr != nil {
				t.Fatalf("replica %s: get clients/%02d: %v %v", r.addr, c, err, toolErr)
			}
			var got struct{ Value string }
			json.Unmarshal(res, &got)
			if len(ackedBy[c]) != writes {
				t.Errorf("client %d: %d writes acknowledged, want %d", c, len(ackedBy[c]), writes)
			}
			if missing := missingEntries(got.Value, ackedBy[c]); len(missing) > 0 {
				t.Errorf("replica %s: clients/%02d lost acknowledged writes %q (value %q)", r.addr, c, missing, got.Value)
			}
			// Appends never interleave: the value is whole entries of this
			// client only (a retried one may appear twice).
			for _, e := range strings.SplitAfter(got.Value, ";") {
				if e != "" && (len(e) != len("00.00;") || !strings.HasPrefix(e, fmt.Sprintf("%02d.", c))) {
					t.Errorf("replica %s: clients/%02d holds a torn or foreign entry %q", r.addr, c, e)
				}
			}
		}
		res, toolErr, err := memoryCall(t.Context(), cs, map[string]any{"op": "list", "prefix": "clients"})
		var list struct{ Topics []struct{ Topic string } }
		json.Unmarshal(res, &list)
		if err != nil || toolErr != nil || len(list.Topics) != clients {
			t.Fatalf("replica %s: list: %d topics, %v %v", r.addr, len(list.Topics), err, toolErr)
		}
	}
}

// missingEntries returns the entries not in value.
func missingEntries(value string, entries []string) []string {
	var missing []string
	for _, e := range entries {
		if !strings.Contains(value, e) {
			missing = append(missing, e)
		}
	}
	return missing
}
