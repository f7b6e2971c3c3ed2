package grantcmd

import (
	"testing"

	"github.com/warden-run/warden/tool"
)

// TestCommand: the command grants exactly what it was built from: a
// topic-limited memory request keeps its topics (never the whole store),
// every key keeps its values, and what a shell would read otherwise is
// quoted.
func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		tool, module string
		c            tool.Capabilities
		want         string
	}{
		{"note", "", tool.Capabilities{Memory: tool.MemoryReadWrite, MemoryTopics: []string{"notes"}},
			"warden grant note memory=read-write memory.topics=notes"},
		{"note", "", tool.Capabilities{MemoryTopics: []string{"notes", "arch/adr"}}, "warden grant note memory.topics=notes,arch/adr"},
		{"linecount", "", tool.Capabilities{FS: tool.FSAccess{Read: []string{"data", "notes:x y"}, Write: []string{"out"}}},
			"warden grant linecount 'fs.read=data,notes:x y' fs.write=out"},
		{"fetch", "mod", tool.Capabilities{Net: []string{"api.example.com", "http://h:8080"}, Env: []string{"TOKEN"}, LSP: []string{"go"}, Client: []string{"elicit"}},
			"warden grant fetch --module mod lsp=go net=api.example.com,http://h:8080 env=TOKEN client=elicit"},
		{"x", "", tool.Capabilities{FS: tool.FSAccess{Read: []string{"it's"}}}, `warden grant x 'fs.read=it'\''s'`},
		{"x", "", tool.Capabilities{}, ""},
	} {
		if got := Command(tc.tool, tc.module, tc.c); got != tc.want {
			t.Errorf("Command(%s, %q, %s):\n got %s\nwant %s", tc.tool, tc.module, tc.c.Summary(), got, tc.want)
		}
	}
	if got, want := ForNeed("echo", "", tool.Need{Key: "memory.topics", Value: "notes"}), "warden grant echo memory.topics=notes"; got != want {
		t.Errorf("ForNeed topic: %s, want %s", got, want)
	}
	if got := ForNeed("echo", "", tool.Need{Key: "nope", Value: "x"}); got != "" {
		t.Errorf("ForNeed unknown key: %q", got)
	}
}
