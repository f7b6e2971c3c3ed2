package memory

import (
	"path"
	"path/filepath"
	"strings"
	"testing"
)

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		topic, prefix string
		want          bool
	}{
		{"arch", "arch", true},
		{"arch/db", "arch", true},
		{"arch/db/x", "arch/db", true},
		{"archive", "arch", false},
		{"arc", "arch", false},
		{"arch", "arch/db", false},
		{"x/arch", "arch", false},
		{"arch", "", false},
	} {
		if got := within(tc.topic, tc.prefix); got != tc.want {
			t.Errorf("within(%q, %q) = %v", tc.topic, tc.prefix, got)
		}
	}
}

// FuzzValidateTopic checks that every topic the sanitizer accepts maps to a
// clean, local, non-hidden file path of bounded size below the store.
func FuzzValidateTopic(f *testing.F) {
	for _, seed := range []string{
		"arch/db", "a", "v1.2_x-y/z", "../x", "a/../../b", "/abs", ".hidden", "a/.b", "a\x00b", "a\\b",
		"a//b", "a/", "x.md", "X.Md/y", "é", "a b", "C:/x", "a/./b", "..", "...", "a..b", ".tmp-1",
		strings.Repeat("a/", MaxTopicDepth) + "a", strings.Repeat("x", MaxTopicBytes+1),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, topic string) {
		if ValidateTopic(topic) != nil {
			return
		}
		name := fileName(topic)
		if len(topic) == 0 || len(topic) > MaxTopicBytes {
			t.Fatalf("accepted %q of length %d", topic, len(topic))
		}
		if path.Clean(name) != name || path.IsAbs(name) || !filepath.IsLocal(name) {
			t.Fatalf("accepted %q: file %q is not a clean local path", topic, name)
		}
		comps := strings.Split(topic, "/")
		if len(comps) > MaxTopicDepth {
			t.Fatalf("accepted %q with %d components", topic, len(comps))
		}
		for _, c := range comps {
			if c == "" || c[0] == '.' || len(c) > maxComponentBytes || strings.HasSuffix(strings.ToLower(c), ".md") {
				t.Fatalf("accepted %q with component %q", topic, c)
			}
		}
		for _, r := range topic {
			if !(r < 0x80 && topicByte(byte(r)) || r == '/') {
				t.Fatalf("accepted %q with rune %q", topic, r)
			}
		}
		// A valid topic is within itself, and within each of its ancestors.
		for i := range comps {
			if p := strings.Join(comps[:i+1], "/"); !within(topic, p) {
				t.Fatalf("%q not within its ancestor %q", topic, p)
			}
		}
		if within(topic, topic+"x") || within(topic+"x", topic) {
			t.Fatalf("%q: prefix matched inside a component", topic)
		}
	})
}

// FuzzDecode checks the request parser: it never panics, and what it
// accepts names only valid topics and prefixes.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"op":"get","topic":"arch/db"}`, `{"op":"set","topic":"a","value":"v"}`, `{"op":"list","prefix":"arch"}`,
		`{"op":"list"}`, `{"op":"delete","topic":"../x"}`, `{"op":"append","topic":"a","value":null}`, `{}`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := decode(raw)
		if err != nil {
			if req != nil {
				t.Fatal("decode returned a request and an error")
			}
			return
		}
		switch req.Op {
		case "list":
			if req.Prefix != "" && ValidateTopic(req.Prefix) != nil || req.Topic != "" || req.Value != nil {
				t.Fatalf("accepted %+v", req)
			}
		case "get", "delete":
			if ValidateTopic(req.Topic) != nil || req.Value != nil {
				t.Fatalf("accepted %+v", req)
			}
		case "set", "append":
			if ValidateTopic(req.Topic) != nil || req.Value == nil {
				t.Fatalf("accepted %+v", req)
			}
		default:
			t.Fatalf("accepted op %q", req.Op)
		}
	})
}
