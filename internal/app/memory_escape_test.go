package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/tool"
)

// TestMemorySymlinkEscape is issue 11's memory attack through a real Go
// guest and the whole app: with .warden/memories -> .. and leak.md -> .env
// in the project, a tool granted only memory: read asks for topic "leak".
// It gets a denied error naming the link, never .env's content; once the
// links are gone the same tool reads a real memory.
func TestMemorySymlinkEscape(t *testing.T) {
	w := newEscapeWorld(t)
	os.MkdirAll(filepath.Join(w.project, ".warden"), 0o755)
	if err := os.Symlink("..", filepath.Join(w.project, ".warden", "memories")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", filepath.Join(w.project, "leak.md")); err != nil {
		t.Fatal(err)
	}
	w.setGrants(t, "    hostcalls: {memory: read}")

	memory := func(req string) outcome {
		t.Helper()
		args := `{"fs":{"op":"stat","path":"src"},"env":{"op":"get","key":"VISIBLE"},"memory":` + req + `}`
		res := call(t, w.app, "hostcalls", args)
		all, _ := json.Marshal(struct {
			*tool.Result
			Captured *tool.Captured
		}{res, res.Captured})
		if strings.Contains(string(all), w.secret) || strings.Contains(w.logs.String(), w.secret) {
			t.Fatalf("the secret leaked: %s", all)
		}
		if res.IsError {
			t.Fatalf("the guest failed: %+v", res.Error)
		}
		var out struct{ Memory outcome }
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
			t.Fatal(err)
		}
		return out.Memory
	}
	for _, req := range []string{`{"op":"get","topic":"leak"}`, `{"op":"list"}`} {
		got := memory(req)
		if kindOf(got) != tool.KindDenied || !strings.Contains(got.Error.Message, ".warden/memories is a symbolic link") {
			t.Fatalf("%s: %+v, want denied naming the link", req, got)
		}
		if strings.Contains(got.Error.Message, w.project) {
			t.Fatalf("%s: message names a host path: %s", req, got.Error.Message)
		}
	}

	// The links removed, the store works for the same tool.
	os.Remove(filepath.Join(w.project, ".warden", "memories"))
	os.MkdirAll(filepath.Join(w.project, ".warden", "memories"), 0o755)
	os.WriteFile(filepath.Join(w.project, ".warden", "memories", "note.md"), []byte("remember"), 0o644)
	got := memory(`{"op":"get","topic":"note"}`)
	if got.Error != nil || !strings.Contains(string(got.Result), `"value":"remember"`) {
		t.Fatalf("get note after the fix: %+v %s", got.Error, got.Result)
	}
}
