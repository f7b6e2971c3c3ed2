package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// MaxRequestState bounds a sealed requestState, in bytes: it carries the
// answers a call has had so far, and travels with every retry.
const MaxRequestState = 1 << 20

// maxUsedStates bounds the memory of spent requestStates (replay defence).
const maxUsedStates = 1 << 16

// requestState is what an input-required result hands the client to echo:
// which call it belongs to, what was answered so far and what is still
// asked. It is sealed (stateSealer), so the client can neither read it as
// anything but opaque nor change a byte of it.
type requestState struct {
	Version int    `json:"v"`
	Method  string `json:"m"` // tools/call, prompts/get, resources/read
	Name    string `json:"t"` // tool or prompt name, resource URI
	Args    string `json:"a"` // digest of the arguments
	Session string `json:"s,omitempty"`
	Expires int64  `json:"e"` // unix seconds
	Nonce   string `json:"n"`
	// Answers are the answers the call consumed, in the order it asked.
	Answers []answer `json:"r,omitempty"`
	// Pending are the requests the client was asked to answer.
	Pending []asked `json:"p,omitempty"`
}

// asked identifies one request: its key, method and a digest of its params,
// so that an answer is used only for the very request it answered. warden's
// own questions carry in their params the digest of the config they were
// asked under (_meta tool.MetaConfig, internal/app): an answer is then
// bound to that config too, and after a change (a grant revoked) the
// question differs and is asked again.
type asked struct {
	Key    string `json:"k"`
	Method string `json:"m"`
	Digest string `json:"d"`
}

type answer struct {
	asked
	Result json.RawMessage `json:"r"`
}

// stateSealer seals requestStates with an HMAC and remembers the ones spent,
// so that a state is accepted once: replaying a state that carried a
// person's "yes" must not run the call again without asking.
type stateSealer struct {
	key []byte
	// spent, when set, is the ledger replicas share; the local set is
	// still checked first, so a replay to this process costs no query.
	spent SpentStates

	mu   sync.Mutex
	used map[string]int64 // nonce -> expiry (unix seconds)
	// forgotten is the latest expiry of a live state forgotten to keep
	// used bounded: no state expiring by then is accepted any more, since
	// it might be one of those (a flood of fresh states would otherwise
	// evict a spent "yes", which could then be replayed).
	forgotten int64
}

// SpentStates is a ledger of spent requestState nonces shared by replicas
// (memory.Memory's, on the PostgreSQL backend).
type SpentStates interface {
	// Spend records nonce, valid until expires, as spent, and reports
	// whether it was not already. It must bound its own wait.
	Spend(ctx context.Context, nonce string, expires time.Time) (fresh bool, err error)
}

func newStateSealer(key []byte, spent SpentStates) *stateSealer {
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			panic("crypto/rand failed: " + err.Error())
		}
	}
	return &stateSealer{key: append([]byte(nil), key...), used: make(map[string]int64), spent: spent}
}

func (s *stateSealer) mac(payload []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte("warden requestState v1\x00"))
	h.Write(payload)
	return h.Sum(nil)
}

func (s *stateSealer) seal(st *requestState) (string, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	sealed := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload))
	if len(sealed) > MaxRequestState {
		return "", fmt.Errorf("the answers so far need a requestState of %d bytes, over the limit of %d", len(sealed), MaxRequestState)
	}
	return sealed, nil
}

// errState is the refusal of a requestState; the server answers it with
// -32602 Invalid params.
type errState struct{ reason string }

func (e *errState) Error() string { return "requestState refused: " + e.reason }

// open verifies sealed and returns its state, spending it. It does not
// check what the state belongs to: see requestState's fields.
func (s *stateSealer) open(sealed string, now time.Time) (*requestState, error) {
	if len(sealed) > MaxRequestState {
		return nil, &errState{fmt.Sprintf("%d bytes, over the limit of %d", len(sealed), MaxRequestState)}
	}
	body, sig, ok := strings.Cut(sealed, ".")
	if !ok {
		return nil, &errState{"not a state this server issued"}
	}
	payload, err1 := base64.RawURLEncoding.Strict().DecodeString(body)
	mac, err2 := base64.RawURLEncoding.Strict().DecodeString(sig)
	// The decoder skips \r and \n: only the canonical encoding is this
	// server's, so that a state has exactly one spelling.
	if err1 == nil && base64.RawURLEncoding.EncodeToString(payload) != body ||
		err2 == nil && base64.RawURLEncoding.EncodeToString(mac) != sig {
		err1 = errors.New("not canonical base64url")
	}
	if err1 != nil || err2 != nil || !hmac.Equal(mac, s.mac(payload)) {
		return nil, &errState{"integrity check failed (tampered, or issued by another server or before a restart)"}
	}
	var st requestState
	if err := json.Unmarshal(payload, &st); err != nil || st.Version != 1 || st.Nonce == "" {
		return nil, &errState{"malformed"}
	}
	if now.Unix() > st.Expires {
		return nil, &errState{"expired: the answers came after tools.defaults.client_wait"}
	}
	if !s.spend(st.Nonce, st.Expires, now) {
		if s.wasForgotten(st.Expires) {
			return nil, &errState{fmt.Sprintf("too old to tell whether it was used: over %d states were spent while it was valid, and the oldest were forgotten; ask again (call without it)", maxUsedStates)}
		}
		return nil, &errState{"already used: each requestState is accepted once"}
	}
	if s.spent != nil {
		// Fail closed: a state that cannot be checked against the other
		// replicas might have been spent there.
		fresh, err := s.spent.Spend(context.Background(), st.Nonce, time.Unix(st.Expires, 0))
		if err != nil {
			return nil, &errState{fmt.Sprintf("could not be checked against the replicas' spent states: %v", err)}
		}
		if !fresh {
			return nil, &errState{"already used: each requestState is accepted once (here or by another replica)"}
		}
	}
	return &st, nil
}

// spend records nonce as used and reports whether it was not before.
func (s *stateSealer) spend(nonce string, expires int64, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.used[nonce]; seen || expires <= s.forgotten {
		return false
	}
	if len(s.used) >= maxUsedStates {
		for n, exp := range s.used {
			if exp < now.Unix() {
				delete(s.used, n)
			}
		}
	}
	if len(s.used) >= maxUsedStates {
		// Every remembered state is still live: refusing a new one would let
		// a client lock everyone out. The one closest to expiry is
		// forgotten, and with it every state expiring by then refused
		// (forgotten): the states issued after it, which expire later, are
		// still accepted once, and no spent one is accepted again.
		var oldest string
		var at int64
		for n, exp := range s.used {
			if oldest == "" || exp < at {
				oldest, at = n, exp
			}
		}
		delete(s.used, oldest)
		s.forgotten = max(s.forgotten, at)
	}
	s.used[nonce] = expires
	return true
}

// wasForgotten reports whether a state expiring at expires is refused
// because spent states as young were forgotten (see forgotten).
func (s *stateSealer) wasForgotten(expires int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return expires <= s.forgotten
}

func newNonce() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// digest is a stable digest of a JSON value: decoded and encoded again, so
// that key order and spacing do not matter.
func digest(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		var v any
		if json.Unmarshal(p, &v) == nil {
			p, _ = json.Marshal(v)
		}
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

var errNoState = errors.New("no requestState")
