package pathguard

import "testing"

func TestCovers(t *testing.T) {
	for _, c := range []struct {
		grant, request string
		want           bool
	}{
		{".", "src/a.go", true},
		{"src", "src", true},
		{"src/", "src/deep/c.go", true},
		{"./src", "project:src/deep", true},
		{"project:", "docs", true},
		{"src", "srcx", false},
		{"src/deep", "src", false},
		{".", "notes:n.md", false},
		{"notes:", "notes:/n.md", true},
		{"notes:a", "notes:a/b", true},
		{"notes:a", "other:a/b", false},
		{"./a:b", "a:b/c", false}, // a root named a, not the project's a:b
		{"./a:b", "./a:b/c", true},
		{"/etc", "/etc", true},
		{"/etc/", "/etc", true},
		{"/etc", "/etc/passwd", false}, // absolute: config decides what it reaches
		{"/", "/etc", false},
		{".", "/etc", false},
		{"/etc", "etc", false},
		{"src/../docs", "docs/a.md", true},
		{".", "../x", false},
		{"../x", "../x", true}, // not a valid path: only the identical string
		{"", "", true},
		{"..", "src", false},
	} {
		if got := Covers(c.grant, c.request); got != c.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.grant, c.request, got, c.want)
		}
	}
}

// TestCoversIsSound checks Covers against the gate: when grant covers
// request, every path the gate lets request through, it lets grant through;
// and Covers is reflexive and transitive.
func TestCoversIsSound(t *testing.T) {
	g, tmp := tree(t)
	entries := []string{".", "project:", "src", "src/", "src/deep", "src/deep/c.go", "./src/../docs", "docs", "notes:", "notes:/",
		"notes:n.md", "bogus:x", tmp + "/home/proj/src", tmp + "/home/proj", "/", "srcx", "../x"}
	paths := []string{"src", "src/a.go", "src/deep/c.go", "docs/a.md", "srcx/y", "notes:n.md", "notes:", "README.md", "."}
	for _, a := range entries {
		if !Covers(a, a) {
			t.Errorf("Covers(%q, itself) = false", a)
		}
		for _, b := range entries {
			if !Covers(a, b) {
				continue
			}
			for _, p := range paths {
				tg, err := g.Parse("test", p)
				if err != nil {
					t.Fatal(err)
				}
				if g.granted([]string{b}, tg) && !g.granted([]string{a}, tg) {
					t.Errorf("Covers(%q, %q), but %q grants %s and %q does not", a, b, b, p, a)
				}
			}
			for _, c := range entries {
				if Covers(b, c) && !Covers(a, c) {
					t.Errorf("not transitive: %q covers %q covers %q", a, b, c)
				}
			}
		}
	}
}

// FuzzCovers checks Covers on arbitrary paths: reflexive, and a path never
// covers one in another root or above it.
func FuzzCovers(f *testing.F) {
	for _, seed := range [][2]string{{".", "src"}, {"notes:", "notes:/a"}, {"./a:b", "a:b"}, {"/etc", "/etc/x"}, {"src", "srcx"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, grant, request string) {
		if !Covers(request, request) {
			t.Fatalf("Covers(%q, itself) = false", request)
		}
		if !Covers(grant, request) {
			return
		}
		gRoot, g, gok := Host.lexical(grant)
		rRoot, r, rok := Host.lexical(request)
		switch {
		case !rok:
			if grant != request {
				t.Fatalf("%q covers the invalid %q", grant, request)
			}
		case !gok || gRoot != rRoot:
			t.Fatalf("%q (root %q) covers %q (root %q)", grant, gRoot, request, rRoot)
		case rRoot == "/" && g != r, g != "." && r != g && (len(r) <= len(g) || r[:len(g)+1] != g+"/"):
			t.Fatalf("%q covers %q, which is not below it", grant, request)
		}
	})
}
