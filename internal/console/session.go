package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/warden-run/warden/internal/principal"
)

// secretBytes is the size of every secret the console hands out: login
// link tokens, session ids and CSRF tokens (256 bits).
const secretBytes = 32

// session is one logged-in browser.
type session struct {
	// id is the cookie's value; csrf the token every state change must
	// carry (a form field or the X-CSRF-Token header).
	id, csrf string
	who      principal.Principal
	// admin may change what the server runs: grants and installs. A
	// one-time link's session is the machine's owner; an OpenID login is
	// an admin only when server.console_login.admin_subjects or admin_groups names them.
	admin   bool
	expires time.Time
	// gone is closed when the session ends (logout, expiry noticed,
	// eviction, Close): its live streams end with it.
	gone chan struct{}
}

// sessions is the bounded session table and the pending login links. The
// table holds sha256 hashes of ids and links, never the values, and
// compares in constant time.
type sessions struct {
	// max bounds the table, perSubject one person's share of it.
	max, perSubject int
	ttl, linkTTL    time.Duration
	now             func() time.Time

	mu    sync.Mutex
	byID  map[[32]byte]*session
	links map[[32]byte]link
}

// link is a one-time login link not yet used.
type link struct {
	who     principal.Principal
	expires time.Time
}

// linkAdmin: a one-time link is printed on the terminal of the machine
// warden runs on; whoever reads it there owns the config.
const linkAdmin = true

func newSessions(max, perSubject int, ttl, linkTTL time.Duration, now func() time.Time) *sessions {
	return &sessions{max: max, perSubject: perSubject, ttl: ttl, linkTTL: linkTTL, now: now,
		byID: map[[32]byte]*session{}, links: map[[32]byte]link{}}
}

// newSecret returns a fresh 256-bit random value, hex-encoded.
func newSecret() string {
	var b [secretBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// hashOf is the table key of a secret: looking a secret up by its hash
// means the map's comparisons never see the secret itself.
func hashOf(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// newLink returns a one-time token that logs who in once, within linkTTL.
// At most max links wait at once; the oldest is dropped for a new one.
func (s *sessions) newLink(who principal.Principal) string {
	token := newSecret()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	if len(s.links) >= s.max {
		var oldest [32]byte
		var at time.Time
		for k, l := range s.links {
			if at.IsZero() || l.expires.Before(at) {
				oldest, at = k, l.expires
			}
		}
		delete(s.links, oldest)
	}
	s.links[hashOf(token)] = link{who: who, expires: s.now().Add(s.linkTTL)}
	return token
}

// useLink exchanges token for a new session, once: the link is removed
// whether or not it had expired.
func (s *sessions) useLink(token string) (*session, error) {
	if len(token) != 2*secretBytes {
		return nil, errLinkRefused
	}
	h := hashOf(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.links[h]
	if !ok {
		return nil, errLinkRefused
	}
	delete(s.links, h)
	if !s.now().Before(l.expires) {
		return nil, errLinkRefused
	}
	return s.openLocked(l.who, linkAdmin)
}

// errLinkRefused: a login link used, expired or never given out.
var errLinkRefused = errors.New("login link used, expired or unknown")

// errSessionsFull refuses a login while the session table is full of
// live sessions: a new login never ends someone else's session.
var errSessionsFull = errors.New("the console has as many sessions as it keeps; try again when one ends")

// open starts a session for who (an OIDC login).
func (s *sessions) open(who principal.Principal, admin bool) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.openLocked(who, admin)
}

// openLocked starts a session. A person (issuer and subject) holds at
// most maxPerSubject sessions: their own oldest makes room for a new
// one, so that logging in again and again evicts only one's own sessions.
// The table as a whole is bounded by max; when it is full of others'
// live sessions the login is refused, never another person's session
// dropped.
func (s *sessions) openLocked(who principal.Principal, admin bool) (*session, error) {
	s.expireLocked()
	subject := subjectOf(who)
	var mine []*session
	for _, ss := range s.byID {
		if subjectOf(ss.who) == subject {
			mine = append(mine, ss)
		}
	}
	if len(mine) >= s.perSubject {
		oldest := mine[0]
		for _, ss := range mine[1:] {
			if ss.expires.Before(oldest.expires) {
				oldest = ss
			}
		}
		s.dropLocked(hashOf(oldest.id))
	} else if len(s.byID) >= s.max {
		return nil, errSessionsFull
	}
	ss := &session{id: newSecret(), csrf: newSecret(), who: who, admin: admin, expires: s.now().Add(s.ttl), gone: make(chan struct{})}
	s.byID[hashOf(ss.id)] = ss
	return ss, nil
}

// subjectOf is the person a session belongs to, for the per-person
// bound: the issuer and the subject (the same subject at two issuers is
// two people).
func subjectOf(p principal.Principal) string { return p.Issuer + "\x00" + p.Subject }

// dropLocked removes a session and ends what it holds open.
func (s *sessions) dropLocked(h [32]byte) {
	if ss, ok := s.byID[h]; ok {
		delete(s.byID, h)
		close(ss.gone)
	}
}

// get returns the live session of cookie value id.
func (s *sessions) get(id string) (*session, bool) {
	if len(id) != 2*secretBytes {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.byID[hashOf(id)]
	if !ok {
		return nil, false
	}
	// The hash matched; compare the value too, in constant time, so that
	// the lookup's answer never depends on a partial match.
	if subtle.ConstantTimeCompare([]byte(ss.id), []byte(id)) != 1 || !s.now().Before(ss.expires) {
		s.dropLocked(hashOf(id))
		return nil, false
	}
	return ss, true
}

// close ends session id.
func (s *sessions) close(id string) {
	s.mu.Lock()
	s.dropLocked(hashOf(id))
	s.mu.Unlock()
}

func (s *sessions) clear() {
	s.mu.Lock()
	for h := range s.byID {
		s.dropLocked(h)
	}
	clear(s.links)
	s.mu.Unlock()
}

func (s *sessions) expireLocked() {
	now := s.now()
	for k, ss := range s.byID {
		if !now.Before(ss.expires) {
			s.dropLocked(k)
		}
	}
	for k, l := range s.links {
		if !now.Before(l.expires) {
			delete(s.links, k)
		}
	}
}

// len is the number of sessions, for tests.
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}
