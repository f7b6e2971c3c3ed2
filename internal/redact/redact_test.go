package redact

import (
	"strings"
	"sync"
	"testing"
)

func TestRedact(t *testing.T) {
	var s Secrets
	if got := s.Redact("nothing set"); got != "nothing set" {
		t.Fatalf("zero Secrets: %q", got)
	}
	var nilSecrets *Secrets
	if got := nilSecrets.Redact("x"); got != "x" {
		t.Fatalf("nil Secrets: %q", got)
	}
	s.Set([]string{"", "abc", "token-1", "token-12", `q"uo\te`})
	for in, want := range map[string]string{
		"a token-1 b":            "a [redacted] b",
		"token-12 and token-1":   "[redacted] and [redacted]", // the longer secret is masked whole
		"abc stays":              "abc stays",                 // shorter than MinLength
		`raw q"uo\te`:            "raw [redacted]",
		`json "q\"uo\\te"`:       `json "[redacted]"`, // as JSON writes it in a string
		"token-1token-1":         "[redacted][redacted]",
		"nothing secret at all.": "nothing secret at all.",
	} {
		if got := s.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	s.Set(nil)
	if got := s.Redact("token-1"); got != "token-1" {
		t.Fatalf("after Set(nil): %q", got)
	}
}

// TestSetWhileRedacting: a reload (Set) while lines are logged (Redact)
// is safe; each Redact sees one set or the other, never a mix.
func TestSetWhileRedacting(t *testing.T) {
	var s Secrets
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 1000 {
			if i%2 == 0 {
				s.Set([]string{"alpha-secret"})
			} else {
				s.Set([]string{"beta-secret"})
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range 1000 {
			got := s.Redact("alpha-secret beta-secret")
			if !strings.Contains(got, "[redacted]") && got != "alpha-secret beta-secret" {
				t.Errorf("Redact = %q", got)
			}
		}
	}()
	wg.Wait()
}

func FuzzRedact(f *testing.F) {
	f.Add("s3cr3t", "a s3cr3t b")
	f.Add(`"\`, `x "\ y`)
	f.Fuzz(func(t *testing.T, secret, text string) {
		var s Secrets
		s.Set([]string{secret})
		got := s.Redact(text)
		// A secret holding a bracket can be formed anew by the mask and
		// the text beside it; one inside the mask is found there.
		if len(secret) >= MinLength && strings.Contains(got, secret) && !strings.Contains(Mask, secret) && !strings.ContainsAny(secret, "[]") {
			t.Fatalf("Redact(%q) with secret %q = %q: still holds it", text, secret, got)
		}
	})
}

// TestLearn: a value learned at call time (a rotated secret file) is
// redacted from then on, beside the config's set; a reload (Set) keeps
// it; the oldest of more than MaxLearned goes.
func TestLearn(t *testing.T) {
	var s Secrets
	s.Set([]string{"config-secret"})
	s.Learn("rotated-v1")
	s.Learn("rotated-v1") // known: nothing changes
	s.Learn("abc")        // too short to redact
	if got := s.Redact("config-secret rotated-v1 abc"); got != "[redacted] [redacted] abc" {
		t.Fatalf("after Learn: %q", got)
	}
	s.Set([]string{"config-secret-2"})
	if got := s.Redact("config-secret-2 rotated-v1"); got != "[redacted] [redacted]" {
		t.Fatalf("after a reload: %q", got)
	}
	for i := range MaxLearned {
		s.Learn(strings.Repeat("x", 4+i))
	}
	if got := s.Redact("rotated-v1"); got != "rotated-v1" {
		t.Fatalf("the oldest learned value past MaxLearned: %q", got)
	}
	var nilSecrets *Secrets
	nilSecrets.Learn("anything") // no panic
}
