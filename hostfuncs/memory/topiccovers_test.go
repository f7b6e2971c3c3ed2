package memory

import "testing"

func TestTopicCovers(t *testing.T) {
	for _, c := range []struct {
		grant, request string
		want           bool
	}{
		{"notes", "notes", true},
		{"notes", "notes/daily", true},
		{"notes", "notesx", false},
		{"notes/daily", "notes", false},
		{"Notes", "notes", false},
		{"../x", "../x", true}, // malformed: only the identical string
		{"../x", "../x/y", false},
		{"", "notes", false},
	} {
		if got := TopicCovers(c.grant, c.request); got != c.want {
			t.Errorf("TopicCovers(%q, %q) = %v, want %v", c.grant, c.request, got, c.want)
		}
	}
}
