package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAdoptGrant(t *testing.T) {
	src := `tools:
  grants:
    # the plugin's tool
    count:
      net: [api.example.com]   # reviewed
    flow: {env: [KEY]}
    bare:
    bound: {module: other, net: [x.example.com]}
`
	d, err := ParseDocument([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"count", "flow", "bare"} {
		if err := d.AdoptGrant(tool, "plugin"); err != nil {
			t.Fatalf("AdoptGrant(%s): %v", tool, err)
		}
	}
	want := `tools:
  grants:
    # the plugin's tool
    count:
      net: [api.example.com]   # reviewed
      module: plugin
    flow: {env: [KEY], module: plugin}
    bare:
      module: plugin
    bound: {module: other, net: [x.example.com]}
`
	if got := string(d.Bytes()); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	// Never rebinds an entry that names its module, never creates one.
	for tool, msg := range map[string]string{"bound": "already other", "count": "already plugin", "nope": "no such entry"} {
		if err := d.AdoptGrant(tool, "plugin"); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("AdoptGrant(%s) = %v, want %q", tool, err, msg)
		}
	}
}

// TestEditFileReadOnly (attacker): a config made read-only is not replaced,
// though the rename that replaces it would succeed (and root ignores modes).
func TestEditFileReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	src := "tools:\n  grants:\n    echo: {}\n"
	if err := os.WriteFile(path, []byte(src), 0o444); err != nil {
		t.Fatal(err)
	}
	_, err := EditFile(path, func(d *Document) error { return d.AdoptGrant("echo", "plugin") })
	if err == nil || !strings.Contains(err.Error(), "is read-only (mode 0444): nothing written") {
		t.Fatalf("EditFile = %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != src {
		t.Fatalf("file changed:\n%s", got)
	}
}
