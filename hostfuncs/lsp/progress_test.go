package lsp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/tool"
)

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

// TestWarmUpWaitEndsAtItsOwnDeadline: a query that finds another query
// warming the server up waits for it only until its own deadline, then
// answers "still loading"; it does not block in the host function past
// the tool's timeout.
func TestWarmUpWaitEndsAtItsOwnDeadline(t *testing.T) {
	s := &server{lang: Language{Command: "pyright-langserver", WaitForProject: true}, target: Target{Language: "python"}, warmSem: make(chan struct{}, 1)}
	s.warmSem <- struct{}{}                                               // another query's warm-up
	ctx, cancel := context.WithDeadline(context.Background(), time.Now()) // already over
	defer cancel()
	err := s.warmUp(ctx, "main.py")
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindUnavailable || !strings.Contains(te.Message, "still loading the project") {
		t.Fatalf("warmUp behind another's: %v", err)
	}
	<-s.warmSem
	s.warm = true
	if err := s.warmUp(ctx, "main.py"); err != nil {
		t.Fatalf("a warm server: %v", err)
	}
}
