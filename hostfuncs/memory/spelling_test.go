package memory

import (
	"strings"
	"testing"

	"github.com/warden-run/warden/tool"
)

// TestTopicGrantSpellings: a tool limited to topic "notes" reaches notes
// and what lies below it, in the one spelling a topic has; every other
// spelling of a topic (another case, a trailing or doubled slash, ./, ..)
// is refused before the grant is consulted, or is another topic outside
// the grant, and the secret is never read or written.
func TestTopicGrantSpellings(t *testing.T) {
	m, _ := newMemory(t)
	mustServe(t, m, rw, req{"op": "set", "topic": "notes/a", "value": "ok"})
	mustServe(t, m, rw, req{"op": "set", "topic": "secret", "value": "s3cret"})
	mustServe(t, m, rw, req{"op": "set", "topic": "Notes/b", "value": "other case, other topic"})
	limited := callWith(tool.Capabilities{Memory: tool.MemoryReadWrite, MemoryTopics: []string{"notes"}})
	if r := mustServe(t, m, limited, req{"op": "get", "topic": "notes/a"}); r["value"] != "ok" {
		t.Fatalf("notes/a: %v", r)
	}
	for topic, kind := range map[string]tool.Kind{
		"notes/../secret": tool.KindInvalidArguments,
		"./notes/a":       tool.KindInvalidArguments,
		"notes/":          tool.KindInvalidArguments,
		"notes//a":        tool.KindInvalidArguments,
		"/notes/a":        tool.KindInvalidArguments,
		`notes\..\secret`: tool.KindInvalidArguments,
		"notes/./a":       tool.KindInvalidArguments,
		"Notes/b":         tool.KindDenied,
		"NOTES":           tool.KindDenied,
		"notesx":          tool.KindDenied,
		"secret":          tool.KindDenied,
	} {
		for _, op := range []req{{"op": "get", "topic": topic}, {"op": "set", "topic": topic, "value": "x"}} {
			_, err := serve(t, m, limited, op)
			if tool.KindOf(err) != kind || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s %q: %v, want %s", op["op"], topic, err, kind)
			}
		}
	}
	for _, prefix := range []string{"Notes", "NOTES", "secret", "notes/../secret"} {
		if r, err := serve(t, m, limited, req{"op": "list", "prefix": prefix}); err == nil && strings.Contains(dumpTopics(r), "secret") || err == nil && strings.Contains(dumpTopics(r), "Notes/b") {
			t.Errorf("list %q shows %v", prefix, r)
		}
	}
	if r := mustServe(t, m, rw, req{"op": "get", "topic": "secret"}); r["value"] != "s3cret" {
		t.Fatalf("the secret changed: %v", r)
	}
}

func dumpTopics(r map[string]any) string {
	var b strings.Builder
	topics, _ := r["topics"].([]any)
	for _, e := range topics {
		if m, ok := e.(map[string]any); ok {
			b.WriteString(m["topic"].(string) + "\n")
		}
	}
	return b.String()
}
