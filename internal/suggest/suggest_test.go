package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"echo", "echo", 0},
		{"echo", "ehco", 1}, // two neighbours swapped: one slip
		{"", "abc", 3},
		{"linecount", "linecont", 1},
		{"tool", "tools", 1},
		{"raed", "read", 1},
		{"pagesize", "page_size", 1},
		{"abc", "cba", 2},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (not symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
	long := string(make([]byte, 65))
	if got := Distance(long, "a"); got != 65 {
		t.Errorf("Distance of a 65-byte string = %d, want its length", got)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"echo", "hash", "jq"}
	for _, tc := range []struct {
		word string
		max  int
		want int
	}{
		{"ehco", 2, 0},
		{"hsah", 2, 1},
		{"jqq", 1, 2},
		{"linecount", 2, -1},
		{"ech", 0, -1},
	} {
		if got := Closest(tc.word, names, tc.max); got != tc.want {
			t.Errorf("Closest(%q, %v, %d) = %d, want %d", tc.word, names, tc.max, got, tc.want)
		}
	}
	if got := Closest("ab", []string{"aa", "bb"}, 1); got != 0 {
		t.Errorf("a tie went to %d, want the earlier candidate", got)
	}
}
