// Package redact keeps the secret values of the config in force (env
// values, tools' config values, the bearer token, the state key) out of
// warden's logs and audit trail.
//
// The capabilities never put a value in an error or a log line
// (hostfuncs/env); but a tool granted one may put it in its own error,
// log line or output, which warden logs. The tool may return what it was
// granted to its client: that is the grant. It may not make warden write
// it to stderr or the audit log, where people and collectors who were
// never granted it read. So every text warden logs passes through
// [Secrets.Redact], which the app refreshes with each config.
package redact

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Mask replaces a secret value wherever it is found.
const Mask = "[redacted]"

// MinLength is the shortest value redacted: a value of one to three
// characters ("1", "yes") would mask every such word of every line, and is
// no secret worth the name.
const MinLength = 4

// Secrets is the set of values to redact. The zero value redacts nothing;
// it is safe for concurrent use, and Set may be called at any time.
type Secrets struct {
	r atomic.Pointer[strings.Replacer]

	// mu orders Set and Learn, which rebuild r from set and learned.
	mu      sync.Mutex
	set     []string
	learned []string
}

// MaxLearned bounds the values Learn keeps: a secret file rotated every
// minute for a year does not grow the replacer without end. The oldest
// goes first; by then the value is long out of use.
const MaxLearned = 256

// Set makes values the secrets of the config, replacing the previous set;
// learned values stay. Each value is also redacted as JSON writes it
// inside a string (quotes, backslashes and control characters escaped),
// so that an audit line holds it neither way.
func (s *Secrets) Set(values []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set = slices.Clone(values)
	s.rebuild()
}

// Learn adds value to the secrets until it falls out of the last
// MaxLearned learned: a secret read at call time (a rotated file, a
// keyring entry changed since the last reload) is redacted from the moment
// it is read, and its old value stays redacted too. It is cheap for a
// value already known. A nil s learns nothing.
func (s *Secrets) Learn(value string) {
	if s == nil || len(value) < MinLength {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.learned, value) || slices.Contains(s.set, value) {
		return
	}
	if len(s.learned) == MaxLearned {
		s.learned = slices.Delete(s.learned, 0, 1)
	}
	s.learned = append(s.learned, value)
	s.rebuild()
}

func (s *Secrets) rebuild() {
	var forms []string
	for _, v := range slices.Concat(s.set, s.learned) {
		if len(v) < MinLength {
			continue
		}
		forms = append(forms, v)
		if b, err := json.Marshal(v); err == nil {
			if q := string(b[1 : len(b)-1]); q != v {
				forms = append(forms, q)
			}
		}
	}
	if len(forms) == 0 {
		s.r.Store(nil)
		return
	}
	// Longest first: a secret that contains another is masked whole.
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Mask)
	}
	s.r.Store(strings.NewReplacer(pairs...))
}

// Redact returns text with every secret replaced by Mask.
func (s *Secrets) Redact(text string) string {
	if s == nil {
		return text
	}
	r := s.r.Load()
	if r == nil {
		return text
	}
	return r.Replace(text)
}
