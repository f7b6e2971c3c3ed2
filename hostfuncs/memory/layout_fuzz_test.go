package memory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/tool"
)

// FuzzStoreLayout builds a hostile project from the input (directories,
// files, symlinks and hard links at attacker-chosen places under the
// project, .warden and the memories directory included) and runs every
// operation on a topic from the input. Whatever the layout, nothing outside
// the store is read or changed: the secret never appears in a reply or an
// error, .env and the outside file keep their content, and every failure is
// a typed error.
func FuzzStoreLayout(f *testing.F) {
	f.Add("L.warden/memories>..\nLleak.md>.env", "leak")
	f.Add("L.warden>sub\nDsub/memories\nLsub/memories/a.md>../../.env", "a")
	f.Add("D.warden/memories/a\nL.warden/memories/a/b.md>../../../outside.md", "a/b")
	f.Add("H.warden/memories/h.md>.env", "h")
	f.Add("D.warden/memories\nL.warden/memories/d>../../..\n", "d/outside")
	f.Add("F.warden/memories/x.md\nL.warden/memories.lock>.env", "x")
	f.Fuzz(func(t *testing.T, layout, topic string) {
		base := t.TempDir()
		project := filepath.Join(base, "project")
		os.MkdirAll(project, 0o755)
		outside := filepath.Join(base, "outside.md")
		os.WriteFile(outside, []byte(secretValue), 0o644)
		os.WriteFile(filepath.Join(project, ".env"), []byte(secretValue), 0o644)
		lines := strings.Split(layout, "\n")
		if len(lines) > 16 {
			lines = lines[:16]
		}
		for _, line := range lines {
			if len(line) < 2 {
				continue
			}
			name, target, _ := strings.Cut(line[1:], ">")
			if !filepath.IsLocal(name) || strings.ContainsRune(name, 0) || strings.ContainsRune(target, 0) {
				continue
			}
			p := filepath.Join(project, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			switch line[0] {
			case 'D':
				os.MkdirAll(p, 0o755)
			case 'F':
				os.WriteFile(p, []byte("mine"), 0o644)
			case 'L':
				os.Symlink(target, p)
			case 'H':
				if filepath.IsLocal(target) {
					os.Link(filepath.Join(project, target), p)
				}
			}
		}
		m, err := New(Config{ProjectRoot: project, Home: base}, nil)
		if err != nil {
			t.Skip(err)
		}
		for _, op := range []string{"get", "list", "append", "set", "get", "delete", "list"} {
			r := req{"op": op, "topic": topic}
			switch op {
			case "list":
				r = req{"op": op}
			case "set", "append":
				r["value"] = "v"
			}
			raw, _ := json.Marshal(r)
			out, err := m.Serve(t.Context(), rw, raw)
			if err != nil && !tool.KindOf(err).Valid() {
				t.Fatalf("%s: untyped error %v", op, err)
			}
			reply, _ := json.Marshal(out)
			for _, s := range []string{string(reply), errText(err)} {
				if strings.Contains(s, "s3cret") || strings.Contains(s, base) {
					t.Fatalf("%s %q leaks: %s", op, topic, s)
				}
			}
		}
		for _, p := range []string{outside, filepath.Join(project, ".env")} {
			if data, _ := os.ReadFile(p); string(data) != secretValue {
				t.Fatalf("%s changed: %q", p, data)
			}
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
