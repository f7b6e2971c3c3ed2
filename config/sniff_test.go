package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSniff(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		body     string
		keys     []string
		isWarden bool
	}{
		{"database:\n  url: x\ncache: 1\n", []string{"cache", "database"}, false},
		{"tools:\n  dir: .\nextra: 1\n", []string{"extra", "tools"}, true},
		{"# nothing\n", nil, true},
	}
	for i, c := range cases {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		keys, ok, err := Sniff(p)
		if err != nil || ok != c.isWarden || !reflect.DeepEqual(keys, c.keys) {
			t.Errorf("case %d: Sniff = %v, %v, %v; want %v, %v", i, keys, ok, err, c.keys, c.isWarden)
		}
	}
	if got := TopLevelKeys(); !reflect.DeepEqual(got, []string{"project", "tools", "security", "server", "lsp", "net", "env", "secrets", "memory", "tasks", "log", "access", "approvals"}) {
		t.Errorf("TopLevelKeys = %v", got)
	}
}
