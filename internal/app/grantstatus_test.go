package app

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestGrantProblemsShowNoCredentials: a value typed like a URL with
// credentials, which config accepts as a project-relative file name, is
// named in the grant's warning and refusal without its userinfo.
func TestGrantProblemsShowNoCredentials(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
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
	const secret = "Hunter2Secret9f3a"
	warnings, err := g.CheckChanges("x", []config.GrantChange{
		{Key: "fs.read", Values: []string{"./https://u:" + secret + "@h/x"}},
		{Key: "fs.write", Values: []string{"secrets/https://u:" + secret + "@h/x"}},
	})
	if err == nil || len(warnings) != 1 {
		t.Fatalf("warnings %q, err %v: want one warning (a file not there yet) and one refusal (deny-listed)", warnings, err)
	}
	for _, text := range append(warnings, err.Error()) {
		if strings.Contains(text, secret) || !strings.Contains(text, "//[redacted]@h/x") {
			t.Errorf("shown with its credentials, or not at all: %s", text)
		}
	}
}
