package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/testwasm"
)

// putWAT assembles e2e/serve/testdata/hostile/<name>/<name>.wat into the
// tools dir as <name>.wasm.
func (e *env) putWAT(t *testing.T, name string) {
	t.Helper()
	wasm := testwasm.WAT(t, filepath.Join("testdata", "hostile", name, name+".wat"))
	if err := os.WriteFile(filepath.Join(e.tools, name+".wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A guest logging 500 lines of 16 KiB in one call writes exactly the lines
// the per-call budget admits (1 MiB: 64 lines) to warden's stderr, then one
// note counting the rest; the server survives and echo still answers.
func TestHostileLogFlood(t *testing.T) {
	e := newEnv(t, "", "echo")
	e.putWAT(t, "logflood")
	cs, stderr := stdioServer(t, e, "", nil)
	res := call(t, cs, "logflood", map[string]any{})
	if res.IsError || text(t, res) != "done" {
		t.Fatalf("logflood: %s", dump(res))
	}
	wantEcho(t, cs, "after the flood")
	marker := strings.Repeat("A", 64)
	var guestBytes int
	eventually(t, "the dropped-lines note on stderr", func() bool {
		return len(stderr.lines("dropped 436 log lines (7143424 bytes) over the per-call limit")) == 1
	})
	lines := stderr.lines(marker)
	for _, l := range lines {
		guestBytes += strings.Count(l, "A")
	}
	if len(lines) != 64 || guestBytes != 64*16384 {
		t.Fatalf("stderr holds %d guest log lines (%d bytes of them), want 64 (%d bytes)", len(lines), guestBytes, 64*16384)
	}
	if n := len(stderr.String()); n > 2<<20 {
		t.Fatalf("stderr grew to %d bytes for one call, want under 2 MiB", n)
	}
}

// deepModule is a 450 KB module whose one function nests 150,000 blocks:
// valid WebAssembly that took wazero minutes to compile. (wat2wasm crashes
// on it, so it is encoded here.)
func deepModule(depth int) []byte {
	u32 := func(b []byte, v uint32) []byte {
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v == 0 {
				return append(b, c)
			}
			b = append(b, c|0x80)
		}
	}
	section := func(m []byte, id byte, payload []byte) []byte {
		return append(u32(append(m, id), uint32(len(payload))), payload...)
	}
	body := []byte{0}
	for range depth {
		body = append(body, 0x02, 0x40)
	}
	for range depth + 1 {
		body = append(body, 0x0b)
	}
	code := append(u32(u32(nil, 1), uint32(len(body))), body...)
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = section(m, 1, []byte{1, 0x60, 0, 0})
	m = section(m, 3, []byte{1, 0})
	return section(m, 10, code)
}

// The deeply nested module is refused at load with the function, the
// limit and the value, and does not hold up the server: initialize is
// answered and echo serves.
func TestHostileDeepNesting(t *testing.T) {
	e := newEnv(t, "", "echo")
	if err := os.WriteFile(filepath.Join(e.tools, "deep.wasm"), deepModule(150_000), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, stderr := stdioServer(t, e, "", nil)
	wantEcho(t, cs, "beside the deep module")
	eventually(t, "the refusal of deep.wasm on stderr", func() bool {
		return len(stderr.lines("tool not loaded", "deep.wasm", "function 0", "control nesting 10001, over the limit of 10000")) == 1
	})
	if names := toolNames(t, cs); !slices.Equal(names, []string{"echo"}) {
		t.Fatalf("tools = %v, want [echo]", names)
	}
	wantEcho(t, cs, "still serving")
}

// A module still loading does not hold up initialize or the other tools:
// tools/list answers with what is ready and names the rest in _meta, and a
// call of a tool not loaded yet waits for it.
func TestHostileSlowLoadServesOthers(t *testing.T) {
	// slowinit spins in _initialize; its budgets are large enough that it
	// is still loading when the test ends, and the server must stop anyway.
	e := newEnv(t, "slowinit: {load_budget: 1h, fuel: 1000000000000000}", "echo")
	e.putWAT(t, "slowinit")
	cs, _ := stdioServerLoading(t, e, "", nil)
	// Called at once, before echo may have loaded: the call waits for the
	// background loads instead of answering "unknown tool".
	wantEcho(t, cs, "right after initialize")
	var listed *mcp.ListToolsResult
	eventually(t, "echo listed", func() bool {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		listed = res
		return len(res.Tools) == 1
	})
	if listed.Tools[0].Name != "echo" {
		t.Fatalf("tools/list: %s", dump(listed))
	}
	if got := fmt.Sprint(listed.Meta["warden/loading"]); got != "[slowinit]" {
		t.Fatalf("tools/list _meta warden/loading = %s, want [slowinit]: %s", got, dump(listed))
	}
	wantEcho(t, cs, "while slowinit loads")
}
