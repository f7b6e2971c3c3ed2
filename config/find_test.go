package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	// A directory named config.yaml is not a config: the search goes on.
	if err := os.Mkdir(filepath.Join(root, "a", "b", FileName), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(root, "a", FileName)
	if err := os.WriteFile(cfg, []byte("tools: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(root, "a"), deep} {
		if got, err := Find(dir); err != nil || got != cfg {
			t.Errorf("Find(%s) = %q, %v; want %s", dir, got, err, cfg)
		}
	}
	// The nearest wins.
	near := filepath.Join(deep, FileName)
	if err := os.WriteFile(near, []byte("tools: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(deep); err != nil || got != near {
		t.Errorf("Find(%s) = %q, %v; want %s", deep, got, err, near)
	}
}

func TestFindNone(t *testing.T) {
	dir := t.TempDir()
	_, err := Find(dir)
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Dir != dir || nf.Looked[0] != dir || nf.Looked[len(nf.Looked)-1] != filepath.Dir(nf.Looked[len(nf.Looked)-1]) {
		t.Fatalf("Find(%s) = %v (%+v); want every folder from it to the root", dir, err, nf)
	}
	for i := 1; i < len(nf.Looked); i++ {
		if nf.Looked[i] != filepath.Dir(nf.Looked[i-1]) {
			t.Fatalf("looked in %v: not each parent in turn", nf.Looked)
		}
	}
}

// TestFindForeign (attacker): a config.yaml another user put in a parent
// folder (anyone can write /tmp) is refused; in the folder itself it is
// found.
func TestFindForeign(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(root, FileName)
	if err := os.WriteFile(cfg, []byte("tools: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(cfg, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	var fe *ForeignError
	if _, err := Find(sub); !errors.As(err, &fe) || fe.Path != cfg || fe.Owner != 4242 || fe.User != 0 {
		t.Fatalf("Find(sub) = %v, want a ForeignError for %s", err, cfg)
	}
	if got, err := Find(root); err != nil || got != cfg {
		t.Fatalf("Find(root) = %q, %v; want %s", got, err, cfg)
	}

	// A symlink another user planted, pointing at the user's own config:
	// relative paths would resolve in the planter's folder.
	mine := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(mine, []byte("tools: {dir: tools}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	planted := t.TempDir()
	link := filepath.Join(planted, FileName)
	if err := os.Symlink(mine, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	below := filepath.Join(planted, "sub")
	if err := os.Mkdir(below, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(below); !errors.As(err, &fe) || fe.Path != link || fe.Owner != 4242 {
		t.Fatalf("Find below a planted symlink = %v, want a ForeignError for %s", err, link)
	}
}

// TestForeignErrorText pins both forms: uids (Unix) and names with SIDs
// (Windows).
func TestForeignErrorText(t *testing.T) {
	for _, c := range []struct {
		err  *ForeignError
		want string
	}{
		{&ForeignError{Path: "/tmp/config.yaml", Owner: 4242, User: 1000},
			"/tmp/config.yaml belongs to uid 4242, not to you (uid 1000): a config found in a parent folder is used only when it is yours"},
		{&ForeignError{Path: `C:\config.yaml`, Owner: -1, User: -1, OwnerName: `PC\mallory (S-1-5-21-1-2-3-1002)`, UserName: `PC\alice (S-1-5-21-1-2-3-1001)`},
			`C:\config.yaml belongs to PC\mallory (S-1-5-21-1-2-3-1002), not to you (PC\alice (S-1-5-21-1-2-3-1001)): a config found in a parent folder is used only when it is yours`},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q\nwant %q", got, c.want)
		}
	}
}

func TestFindRelative(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	if err := os.WriteFile(FileName, []byte("tools: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Find("."); err != nil || got != filepath.Join(root, FileName) {
		t.Fatalf("Find(.) = %q, %v; want an absolute path", got, err)
	}
}
