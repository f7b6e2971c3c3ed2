package config

import (
	"os"
	"testing"
)

// TestDiffEdit: the diff of a grant edit is exactly the lines it adds, in
// their context, comments kept, and the file is not written.
func TestDiffEdit(t *testing.T) {
	src := "# team config\ntools:\n  grants:\n    echo:\n      # reads the docs\n      fs: {read: [docs]}\n  gates: {}\nlog: {level: info}\n"
	path := writeConfig(t, src)
	diff, err := DiffEdit(path, func(d *Document) error {
		return d.Grant("echo", GrantChange{Key: "net", Values: []string{"api.example.com"}})
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "--- config.yaml\n+++ config.yaml\n@@ -5,4 +5,5 @@\n       # reads the docs\n       fs: {read: [docs]}\n+      net: [api.example.com]\n   gates: {}\n log: {level: info}\n"
	if diff != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", diff, want)
	}
	if now, _ := os.ReadFile(path); string(now) != src {
		t.Fatalf("DiffEdit wrote the file:\n%s", now)
	}
	if Diff("x", []byte("a\n"), []byte("a\n")) != "" {
		t.Fatal("no change, yet a diff")
	}
}
