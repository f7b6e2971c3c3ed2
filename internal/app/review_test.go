package app

import (
	"testing"

	"github.com/warden-run/warden/tool"
)

func TestMissing(t *testing.T) {
	req := tool.Capabilities{
		FS:           tool.FSAccess{Read: []string{"src/pkg", "notes:daily", "docs", "./a:b"}, Write: []string{"out"}},
		Memory:       tool.MemoryReadWrite,
		MemoryTopics: []string{"arch/db", "archive"},
		LSP:          []string{"Go", "rust"},
		Net:          []string{"api.github.com", "uploads.github.com", "http://example.com:8080", "internal.corp private", "github.com"},
		Env:          []string{"github_token", "NPM_TOKEN"},
	}
	granted := tool.Capabilities{
		FS:           tool.FSAccess{Read: []string{"src", "notes:", "project:./a:b"}, Write: []string{"outside"}},
		Memory:       tool.MemoryRead,
		MemoryTopics: []string{"arch"},
		LSP:          []string{"go"},
		Net:          []string{"API.github.com", "*.github.com", "example.com:8080"},
		Env:          []string{"GITHUB_TOKEN"},
	}
	got := Missing(req, granted).Summary()
	want := "fs.read=docs fs.write=out memory=read-write memory.topics=archive lsp=rust " +
		"net=http://example.com:8080,internal.corp private,github.com env=NPM_TOKEN"
	if got != want {
		t.Errorf("missing:\n got %s\nwant %s", got, want)
	}
	if m := Missing(req, req); !m.IsZero() {
		t.Errorf("a grant of exactly the request misses %s", m.Summary())
	}
	all := tool.Capabilities{FS: tool.FSAccess{Read: []string{"."}}, Memory: tool.MemoryReadWrite, Net: []string{"*"}}
	if m := Missing(tool.Capabilities{FS: tool.FSAccess{Read: []string{"src", "x/y"}}, Memory: tool.MemoryRead,
		MemoryTopics: []string{"a"}, Net: []string{"a.com", "b.org", "10.0.0.1 private"}}, all); m.Summary() != "net=10.0.0.1 private" {
		t.Errorf("broad grant misses %s", m.Summary())
	}
}
