package lsp

import "testing"

// TestProgressEndBeforeBegin: $/progress notifications are handled
// concurrently, so a short piece of work's end can be handled before its
// begin (pyright does this under load). The server must not count it as
// loading for ever afterwards: a workspace search that finds nothing would
// then wait for its deadline and answer "still loading".
func TestProgressEndBeforeBegin(t *testing.T) {
	s := &server{progress: map[string]bool{}, endedFirst: map[string]bool{}, progSignal: make(chan struct{})}
	s.trackProgress("a", "begin")
	s.trackProgress("b", "end")
	s.trackProgress("b", "begin")
	if busy, _ := s.loading(); !busy {
		t.Fatal("a is still in progress")
	}
	s.trackProgress("a", "end")
	if busy, _ := s.loading(); busy {
		t.Fatalf("an end handled before its begin left the server loading: %v", s.progress)
	}
	if len(s.endedFirst) != 0 {
		t.Fatalf("the early end is still remembered: %v", s.endedFirst)
	}
	// Ends of tokens never begun are remembered only up to a bound.
	for i := range 2 * maxEndedFirst {
		s.trackProgress(string(rune('0'+i%10))+string(rune(i)), "end")
	}
	if len(s.endedFirst) > maxEndedFirst {
		t.Fatalf("%d early ends remembered, bound %d", len(s.endedFirst), maxEndedFirst)
	}
}
