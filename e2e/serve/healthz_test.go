package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// healthState is /healthz's answer, with its status code.
type healthState struct {
	code         int
	Status       string   `json:"status"`
	Ready        bool     `json:"ready"`
	Tools        int      `json:"tools"`
	Loading      []string `json:"loading"`
	LoadingTotal int      `json:"loading_total"`
}

func getHealthz(t *testing.T, addr, path string) healthState {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := healthState{code: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("GET %s: %d, not JSON: %v", path, resp.StatusCode, err)
	}
	return h
}

// TestHealthzWhileLoading: while a module loaded at start is still in its
// _initialize (slowinit spins past the end of the test), the real binary's
// /healthz answers 200 "loading" naming and counting it (liveness: the
// process must not be restarted while it compiles), /healthz?ready answers
// 503 (readiness: no clients yet), the module already loaded is served,
// and the state holds after a call. TestHTTP checks the ready side.
func TestHealthzWhileLoading(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "slowinit: {load_budget: 1h, fuel: 1000000000000000}", "echo")
	e.putWAT(t, "slowinit")
	addr := freeAddr(t)
	s := startServeLoading(t, e, addr, "--http="+addr)
	eventually(t, "echo served", func() bool { return getHealthz(t, addr, "/healthz").Tools == 1 })
	check := func(when string) {
		t.Helper()
		for path, code := range map[string]int{"/healthz": http.StatusOK, "/healthz?ready": http.StatusServiceUnavailable} {
			h := getHealthz(t, addr, path)
			if h.code != code || h.Status != "loading" || h.Ready || h.Tools != 1 ||
				fmt.Sprint(h.Loading) != "[slowinit]" || h.LoadingTotal != 1 {
				t.Errorf("%s: GET %s: %d %+v, want %d status loading, ready false, tools 1, loading [slowinit] (1)", when, path, h.code, h, code)
			}
		}
	}
	check("while slowinit loads")
	wantEcho(t, s.connect(t, "", nil, nil), "while slowinit loads")
	check("after a call")
}
