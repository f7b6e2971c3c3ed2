package pathguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

// foldWorld is a project root that is the home directory itself, so the
// home rules (~/.ssh) apply to root-relative paths too, with one user
// rule spelled in NFC.
func foldWorld(tb testing.TB) *Guard {
	tb.Helper()
	home, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range []string{".ssh/id_ed25519", "keys/id_rsa", "café/plan.txt", "src/a.go"} {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	g, err := New(Config{ProjectDir: home, Home: home, Deny: []string{norm.NFC.String("café"), norm.NFC.String("pl?n/[éè]t?"), "straße", "ma?e"}})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// TestDenyRulesFoldLikeFileSystems: a file system that ignores case
// (macOS, Windows, ext4 and f2fs casefold directories) also ignores the
// Unicode normalization form and folds fully: "id_rſa" (long s, U+017F)
// opens id_rsa there, and "café" in NFD opens the NFC directory.
// strings.ToLower left both spellings past the deny-list; fold does not.
func TestDenyRulesFoldLikeFileSystems(t *testing.T) {
	g := foldWorld(t)
	for _, p := range []string{
		"keys/id_rsa", "keys/ID_RSA", "keys/id_r\u017fa", "keys/Id_Rsa",
		".ssh/id_ed25519", ".SSH/id_ed25519", ".\u017fsh/id_ed25519", ".s\u017fh",
		norm.NFC.String("café/plan.txt"), norm.NFD.String("café/plan.txt"), norm.NFD.String("CAFÉ/plan.txt"),
		norm.NFD.String("plan/été"), norm.NFD.String("PLÅN/ÈTÉ"), norm.NFC.String("plån/été"),
		"stra\u00dfe", "STRASSE", "strasse", "Stra\u1e9ee", // deny "straße": ß folds to ss, as ext4 casefold has it
		"ma\u00dfe/x", "mAßE", // deny "ma?e" as written still takes ß as one character
		"src/.env", "src/.ENV", "src/.env.LOCAL", "src/server.P\u0045M", "src/K.pem", "src/\u212a.pem",
	} {
		_, err := g.Check("read", Read, "t", []string{"."}, p)
		if err == nil || !strings.Contains(err.Error(), "matches deny rule") {
			t.Errorf("Check(%q) = %v, want a deny rule", p, err)
		}
	}
	for _, p := range []string{"src/a.go", "caf", "cafe/x", "keys/id_rs", "strase", "masse"} {
		if _, err := g.Check("read", Read, "t", []string{"."}, p); err != nil {
			t.Errorf("Check(%q) = %v, want allowed", p, err)
		}
	}
}

// FuzzDenyFold: two spellings that fold alike (the file system may open
// either as the other) get the same deny decision: the matcher sees only
// the folded forms.
func FuzzDenyFold(f *testing.F) {
	for _, s := range []string{"keys/id_r\u017fa", norm.NFD.String("café/x"), ".SSH", "src/.Env", "a/\u212a.pem", "x"} {
		f.Add(s)
	}
	g := foldWorld(f)
	f.Fuzz(func(t *testing.T, p string) {
		t1, err := g.Parse("read", p)
		if err != nil || strings.Contains(p, ":") {
			return
		}
		want := g.Denied(t1) != nil
		for _, q := range []string{strings.ToUpper(p), strings.ToLower(p), norm.NFC.String(p), norm.NFD.String(p),
			strings.ReplaceAll(p, "s", "\u017f"), strings.ReplaceAll(p, "k", "\u212a")} {
			if fold(q) != fold(p) {
				continue
			}
			t2, err := g.Parse("read", q)
			if err != nil {
				continue
			}
			if got := g.Denied(t2) != nil; got != want {
				t.Fatalf("%q denied %v, %q (folds alike) denied %v", p, want, q, got)
			}
		}
	})
}

// TestGrantSpellings: a grant and a request name a path in any of its
// lexical spellings (trailing slash, "./", "//", ".", "..", the project
// root by name) and get one decision; another case is another path on
// Linux, and grants are exact, so it is refused, never widened.
func TestGrantSpellings(t *testing.T) {
	g := foldWorld(t)
	for _, grant := range []string{"src", "src/", "./src", "src//", "src/.", "x/../src", "project:src", "project:/src"} {
		for _, p := range []string{"src/a.go", "./src/a.go", "src//a.go", "src/./a.go", "src/deep/../a.go", "project:src/a.go", "project:/src/a.go"} {
			if _, err := g.Check("read", Read, "t", []string{grant}, p); err != nil {
				t.Errorf("grant %q, read %q: %v", grant, p, err)
			}
		}
		for _, p := range []string{"SRC/a.go", "Src/a.go", "src2/a.go", "srca.go", "keys/x", "src/../keys/x", "PROJECT:src/a.go", "."} {
			if _, err := g.Check("read", Read, "t", []string{grant}, p); err == nil {
				t.Errorf("grant %q allows %q", grant, p)
			}
		}
	}
}
