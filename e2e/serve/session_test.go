package serve

import (
	"slices"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSessionIsolation: the state fixture counts its calls in a guest global.
// Under the default isolation (session), calls of one MCP session share an
// instance and count on; another session, even interleaved with the first,
// starts from the module's initial state; a session that ends takes its
// state along; stateless (2026-07-28) calls have no session and each starts
// fresh.
func TestSessionIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "state")
	s := startHTTP(t, e)

	count := func(cs *mcp.ClientSession) int {
		t.Helper()
		res := call(t, cs, "state", nil)
		n, err := strconv.Atoi(text(t, res))
		if res.IsError || err != nil {
			t.Fatalf("state: %s", dump(res))
		}
		return n
	}
	a := s.connect(t, "2025-11-25", nil, nil)
	b := s.connect(t, "2025-11-25", nil, nil)
	if a.ID() == "" || a.ID() == b.ID() {
		t.Fatalf("session IDs %q and %q: want two distinct sessions", a.ID(), b.ID())
	}
	var got []int
	for _, cs := range []*mcp.ClientSession{a, a, b, a, b} {
		got = append(got, count(cs))
	}
	if want := []int{1, 2, 1, 3, 2}; !slices.Equal(got, want) {
		t.Errorf("calls A A B A B counted %v, want %v", got, want)
	}

	// A session that ends (DELETE) leaves nothing behind for the next one.
	if err := a.Close(); err != nil {
		t.Errorf("close session A: %v", err)
	}
	c := s.connect(t, "2025-11-25", nil, nil)
	if n := count(c); n != 1 {
		t.Errorf("a new session after A ended counted %d, want 1", n)
	}
	if n := count(b); n != 3 {
		t.Errorf("session B after A ended counted %d, want 3", n)
	}

	stateless := s.connect(t, "2026-07-28", nil, nil)
	for i := range 3 {
		if n := count(stateless); n != 1 {
			t.Errorf("stateless call %d counted %d, want 1", i+1, n)
		}
	}
}
