package capset

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/capset/capsettest"
	"github.com/warden-run/warden/tool"
)

func TestMissing(t *testing.T) {
	req := tool.Capabilities{
		FS:           tool.FSAccess{Read: []string{"src/pkg", "notes:daily", "docs", "./a:b"}, Write: []string{"out"}},
		Memory:       tool.MemoryReadWrite,
		MemoryTopics: []string{"arch/db", "archive"},
		LSP:          []string{"Go", "rust"},
		Net:          []string{"api.github.com", "uploads.github.com", "http://example.com:8080", "internal.corp private", "github.com", "127.0.0.1"},
		Env:          []string{"github_token", "NPM_TOKEN"},
		Client:       []string{"elicit", "sample"},
	}
	granted := tool.Capabilities{
		FS:           tool.FSAccess{Read: []string{"src", "notes:", "project:./a:b"}, Write: []string{"outside"}},
		Memory:       tool.MemoryRead,
		MemoryTopics: []string{"arch"},
		LSP:          []string{"go"},
		Net:          []string{"API.github.com", "*.github.com", "example.com:8080", "*"},
		Env:          []string{"GITHUB_TOKEN"},
		Client:       []string{"Elicit"},
	}
	got := Missing(req, granted).Summary()
	want := "fs.read=docs fs.write=out memory=read-write memory.topics=arch/db,archive lsp=rust " +
		"net=http://example.com:8080,internal.corp private,127.0.0.1 env=NPM_TOKEN client=sample"
	if got != want {
		t.Errorf("missing:\n got %s\nwant %s", got, want)
	}
	if m := Missing(req, req); !m.IsZero() {
		t.Errorf("a grant of exactly the request misses %s", m.Summary())
	}
}

func TestMissingMemory(t *testing.T) {
	for _, c := range []struct {
		name               string
		requested, granted tool.Capabilities
		want               string
	}{
		{"topics dropped: the whole store", mem(tool.MemoryRead), mem(tool.MemoryRead, "notes"), "memory=read"},
		{"topics dropped, read-write", mem(tool.MemoryReadWrite), mem(tool.MemoryReadWrite, "notes"), "memory=read-write"},
		{"a topic added", mem(tool.MemoryRead, "notes", "keys"), mem(tool.MemoryRead, "notes"), "memory.topics=keys"},
		{"a subtopic", mem(tool.MemoryRead, "notes/daily"), mem(tool.MemoryRead, "notes"), "-"},
		{"whole store covers topics", mem(tool.MemoryRead, "notes"), mem(tool.MemoryReadWrite), "-"},
		{"level raised", mem(tool.MemoryReadWrite, "notes"), mem(tool.MemoryRead, "notes"), "memory=read-write memory.topics=notes"},
		{"no level, no request", mem(tool.MemoryNone, "notes"), mem(tool.MemoryNone), "-"},
		{"unknown level granted grants nothing", mem(tool.MemoryRead), mem("admin"), "memory=read"},
		{"unknown level requested", mem("admin"), mem(tool.MemoryReadWrite), "memory=admin"},
	} {
		if got := Missing(c.requested, c.granted).Summary(); got != c.want {
			t.Errorf("%s: missing %s, want %s", c.name, got, c.want)
		}
	}
}

func mem(level tool.MemoryAccess, topics ...string) tool.Capabilities {
	return tool.Capabilities{Memory: level, MemoryTopics: topics}
}

func TestDescribe(t *testing.T) {
	got := Describe(tool.Capabilities{Net: []string{"https://127.0.0.1", "10.0.0.7", "api.example.com"}, Memory: tool.MemoryRead, Env: []string{"TOKEN"}})
	want := []string{"memory=read over every topic (the whole store)", `net=https://127.0.0.1 (an internal host, which "*" never covers)`,
		`net=10.0.0.7 (an internal host, which "*" never covers)`, "net=api.example.com", "env=TOKEN"}
	if !slices.Equal(got, want) {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	if got := Describe(tool.Capabilities{MemoryTopics: []string{"keys"}}); !slices.Equal(got, []string{"memory.topics=keys"}) {
		t.Errorf("Describe(topics) = %q", got)
	}
	if got := Describe(tool.Capabilities{Memory: tool.MemoryReadWrite, MemoryTopics: []string{"a", "b"}}); !slices.Equal(got, []string{"memory=read-write over topics a,b"}) {
		t.Errorf("Describe(level over topics) = %q", got)
	}
}

func TestCoversNeed(t *testing.T) {
	r := tool.Capabilities{
		FS:           tool.FSAccess{Read: []string{".", "notes:x"}, Write: []string{"out/"}},
		Net:          []string{"*", "*.cdn.example.com"},
		Memory:       tool.MemoryReadWrite,
		MemoryTopics: []string{"arch"},
		Client:       []string{"sample"},
	}
	for _, c := range []struct {
		key, value string
		want       bool
	}{
		{"fs.read", "src/a.go", true},
		{"fs.read", "notes:x/y", true},
		{"fs.read", "notes:y", false}, // "." is the project root, not every root
		{"fs.write", "out/a", true},
		{"fs.write", "src/a", false},
		{"net", "https://api.example.com", true},
		{"net", "https://127.0.0.1", false},
		{"net", "https://10.0.0.7", false},
		{"net", "https://[::1]", false},
		{"net", "https://[fd00::1]", false},
		{"net", "https://169.254.169.254", false},
		{"net", "https://localhost", false},
		{"net", "https://app.localhost", false},
		{"net", "http://api.example.com", false},
		{"memory.topics", "arch/db", true},
		{"memory.topics", "secrets", false},
		{"memory", "read", false}, // a level alone is the whole store; the descriptor asked for arch
		{"client", "sample", true},
		{"client", "elicit", false},
		{"nosuch", "x", false},
	} {
		if got := CoversNeed(r, tool.Need{Key: c.key, Value: c.value}); got != c.want {
			t.Errorf("CoversNeed(%s=%s) = %v, want %v", c.key, c.value, got, c.want)
		}
	}
	whole := tool.Capabilities{Memory: tool.MemoryRead}
	if !CoversNeed(whole, tool.Need{Key: "memory", Value: "read"}) || CoversNeed(whole, tool.Need{Key: "memory", Value: "read-write"}) {
		t.Error("a descriptor requesting the whole store at read")
	}
}

// widening is c grown in one dimension: by one entry of the universe, or
// by a level or the whole memory store. alone is that growth as a request
// by itself.
type widening struct {
	what     string
	c, alone tool.Capabilities
	always   bool // growth whatever c holds: a higher level, the topic limit dropped
}

// widenings returns every way an update can ask for more than c in one
// dimension.
func widenings(c tool.Capabilities) []widening {
	var out []widening
	grow := func(what string, set func(*tool.Capabilities, []string), have []string, from []string) {
		for _, v := range from {
			w, alone := clone(c), tool.Capabilities{}
			set(&w, append(slices.Clone(have), v))
			set(&alone, []string{v})
			out = append(out, widening{what + " " + v, w, alone, false})
		}
	}
	grow("fs.read", func(w *tool.Capabilities, s []string) { w.FS.Read = s }, c.FS.Read, capsettest.FSPaths)
	grow("fs.write", func(w *tool.Capabilities, s []string) { w.FS.Write = s }, c.FS.Write, capsettest.FSPaths)
	grow("net", func(w *tool.Capabilities, s []string) { w.Net = s }, c.Net, capsettest.NetHosts)
	grow("env", func(w *tool.Capabilities, s []string) { w.Env = s }, c.Env, capsettest.EnvKeys)
	grow("lsp", func(w *tool.Capabilities, s []string) { w.LSP = s }, c.LSP, capsettest.LSPLanguages)
	grow("client", func(w *tool.Capabilities, s []string) { w.Client = s }, c.Client, tool.ClientFeatures)
	if c.Memory != tool.MemoryNone && len(c.MemoryTopics) > 0 {
		grow("memory.topics", func(w *tool.Capabilities, s []string) { w.MemoryTopics, w.Memory = s, c.Memory }, c.MemoryTopics, capsettest.Topics)
		w := clone(c)
		w.MemoryTopics = nil
		out = append(out, widening{"the whole store", w, tool.Capabilities{Memory: c.Memory}, true})
	}
	if c.Memory != tool.MemoryReadWrite {
		w := clone(c)
		w.Memory = capsettest.Levels[slices.Index(capsettest.Levels, c.Memory)+1]
		out = append(out, widening{"memory " + string(w.Memory), w, tool.Capabilities{Memory: w.Memory, MemoryTopics: c.MemoryTopics}, true})
	}
	return out
}

func clone(c tool.Capabilities) tool.Capabilities {
	c.FS.Read, c.FS.Write, c.MemoryTopics = slices.Clone(c.FS.Read), slices.Clone(c.FS.Write), slices.Clone(c.MemoryTopics)
	c.LSP, c.Net, c.Env, c.Client = slices.Clone(c.LSP), slices.Clone(c.Net), slices.Clone(c.Env), slices.Clone(c.Client)
	return c
}

// TestCoversProperties checks, over generated capability sets: Covers is
// reflexive and transitive, a narrowing is covered, Missing is zero exactly
// when Covers holds and lists only what is not covered, every widening in
// every dimension is not covered, and no wildcard covers an internal host.
func TestCoversProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 1)) // fixed: the same cases on every run
	for range 1500 {
		a := capsettest.Caps(r)
		b, x := capsettest.Narrow(r, a), capsettest.Caps(r)
		c, y := capsettest.Narrow(r, b), capsettest.Caps(r)
		if !Covers(a, a) {
			t.Fatalf("not reflexive: %s", a.Summary())
		}
		if !Covers(a, b) || !Covers(b, c) || !Covers(a, c) {
			t.Fatalf("a narrowing is not covered:\n a %s\n b %s\n c %s", a.Summary(), b.Summary(), c.Summary())
		}
		for _, triple := range [][3]tool.Capabilities{{a, x, y}, {x, a, b}, {a, b, y}, {x, y, a}} {
			p, q, s := triple[0], triple[1], triple[2]
			if Covers(p, q) && Covers(q, s) && !Covers(p, s) {
				t.Fatalf("not transitive:\n %s\n %s\n %s", p.Summary(), q.Summary(), s.Summary())
			}
		}
		m := Missing(x, a)
		if m.IsZero() != Covers(a, x) {
			t.Fatalf("Missing(%s, %s) = %s, but Covers = %v", x.Summary(), a.Summary(), m.Summary(), Covers(a, x))
		}
		// What is missing is what is not covered: adding it to the grant
		// covers the request.
		if !Covers(union(a, m), x) {
			t.Fatalf("granting the missing %s to %s still does not cover %s", m.Summary(), a.Summary(), x.Summary())
		}
		// Growing one dimension by one entry is growth exactly when that
		// entry alone is not covered; a higher level or a dropped topic
		// limit always is.
		for _, w := range widenings(a) {
			grown := !Covers(a, w.c)
			if grown != !Covers(a, w.alone) || w.always && !grown {
				t.Fatalf("%s: %s covers %s = %v, covers the growth alone = %v", w.what, a.Summary(), w.c.Summary(), !grown, Covers(a, w.alone))
			}
		}
		// An internal host is growth over any set of wildcards.
		var wilds []string
		for _, h := range append(a.Net, "*") {
			if h == "*" || h[0] == '*' || strings.Contains(h, "://*") {
				wilds = append(wilds, h)
			}
		}
		for _, h := range capsettest.InternalHosts {
			if Covers(tool.Capabilities{Net: wilds}, tool.Capabilities{Net: []string{h}}) && !slices.Contains(wilds, h) {
				t.Fatalf("wildcards %v cover the internal host %s", wilds, h)
			}
		}
		wild := tool.Capabilities{Net: []string{"*", "http://*", "*:8443", "http://*:3000", "*.localhost", "*.example.com"}}
		for _, h := range capsettest.InternalHosts {
			if Covers(wild, tool.Capabilities{Net: []string{h}}) && !slices.Contains(wild.Net, h) {
				t.Fatalf("a wildcard covers the internal host %s", h)
			}
		}
	}
}

// union is a with every entry of b added: the grant after approving b.
func union(a, b tool.Capabilities) tool.Capabilities {
	u := clone(a)
	u.FS.Read = append(u.FS.Read, b.FS.Read...)
	u.FS.Write = append(u.FS.Write, b.FS.Write...)
	u.LSP = append(u.LSP, b.LSP...)
	u.Net = append(u.Net, b.Net...)
	u.Env = append(u.Env, b.Env...)
	u.Client = append(u.Client, b.Client...)
	if b.Memory != tool.MemoryNone {
		if levelCovers(b.Memory, u.Memory) {
			u.Memory = b.Memory
		}
		if len(b.MemoryTopics) == 0 {
			u.MemoryTopics = nil
		}
	}
	if len(u.MemoryTopics) > 0 {
		u.MemoryTopics = append(u.MemoryTopics, b.MemoryTopics...)
	}
	return u
}

// TestEveryDimensionIsCovered fails when tool.Capabilities gains a field:
// Missing, Describe, Need and the generators above must learn it, or an
// update could widen it unseen.
func TestEveryDimensionIsCovered(t *testing.T) {
	var fields []string
	var walk func(reflect.Type, string)
	walk = func(rt reflect.Type, prefix string) {
		for f := range rt.Fields() {
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, prefix+f.Name+".")
				continue
			}
			fields = append(fields, prefix+f.Name)
		}
	}
	walk(reflect.TypeFor[tool.Capabilities](), "")
	known := []string{"FS.Read", "FS.Write", "Memory", "MemoryTopics", "LSP", "Net", "Env", "Client"}
	if !slices.Equal(fields, known) {
		t.Fatalf("tool.Capabilities has fields %v; capset knows %v: teach Missing, Describe, Need and the generators the new one", fields, known)
	}
}
