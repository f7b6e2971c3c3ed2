package app

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/tool"
)

// TestGrantStatus: the fs values no call could use are left out of the
// usable grant, each with the call's reason; a missing path stays usable
// and is named as absent; other keys pass as they are.
func TestGrantStatus(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "data"), 0o755)
	os.Symlink("/etc", filepath.Join(dir, "etclink"))
	path := filepath.Join(dir, "config.yaml")
	os.WriteFile(path, []byte("tools: {cache_dir: off}\nsecurity: {deny: [secrets]}\n"), 0o644)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGrants(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var granted tool.Capabilities
	granted.FS.Read = []string{"data", "/etc", "../..", "secrets", "etclink", "dta", "."}
	granted.FS.Write = []string{"config.yaml", dir + "/data"}
	granted.Net = []string{"example.com"}
	s := g.Status("x", granted)
	if got, want := s.Usable.FS.Read, []string{"data", "dta", "."}; !slices.Equal(got, want) {
		t.Errorf("usable fs.read %q, want %q", got, want)
	}
	if got, want := s.Usable.FS.Write, []string{dir + "/data"}; !slices.Equal(got, want) {
		t.Errorf("usable fs.write %q, want %q", got, want)
	}
	if !slices.Equal(s.Usable.Net, granted.Net) {
		t.Errorf("net changed: %q", s.Usable.Net)
	}
	want := []string{
		`grant fs.read "/etc": outside every root (roots: project); add its directory to project.roots to grant it`,
		`grant fs.read "../..": outside root "project"; paths may not leave their root`,
		`grant fs.read "secrets": matches deny rule "secrets" (security.deny); deny rules always win over grants and also apply to the real path behind symlinks`,
		`grant fs.read "etclink": resolves outside root "project"; symlinks may not leave their root`,
		`grant fs.write "config.yaml": warden's own config file; no grant can allow a tool to read or write it`,
	}
	var got []string
	for _, p := range s.Unusable {
		got = append(got, p.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("unusable:\n%q\nwant\n%q", got, want)
	}
	if len(s.Absent) != 1 || s.Absent[0].Value != "dta" {
		t.Errorf("absent: %v", s.Absent)
	}
}
