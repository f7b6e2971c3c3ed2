package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

var stateTestKey = []byte("0123456789abcdef0123456789abcdef")

// stateNow is the fixed clock of these tests.
var stateNow = time.Unix(1_900_000_000, 0)

func sampleState(nonce string) *requestState {
	return &requestState{
		Version: 1, Method: "tools/call", Name: "ask", Args: digest([]byte(`{"text":"x"}`)),
		Session: "s1", Expires: stateNow.Add(time.Minute).Unix(), Nonce: nonce,
		Answers: []answer{
			{asked: asked{Key: "elicit-1", Method: "elicitation/create", Digest: digest([]byte(`{"message":"a"}`))},
				Result: json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)},
		},
		Pending: []asked{{Key: "sample-2", Method: "sampling/createMessage", Digest: digest([]byte(`{}`))}},
	}
}

func mustSeal(t testing.TB, s *stateSealer, st *requestState) string {
	t.Helper()
	sealed, err := s.seal(st)
	if err != nil {
		t.Fatal(err)
	}
	return sealed
}

func refusedSaying(t *testing.T, err error, want string) {
	t.Helper()
	var es *errState
	if !errors.As(err, &es) {
		t.Fatalf("error %v (%T), want an errState", err, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

func TestStateRoundTrip(t *testing.T) {
	s := newStateSealer(stateTestKey, nil)
	st := sampleState("n1")
	sealed := mustSeal(t, s, st)
	if strings.Contains(sealed, "Ada") {
		t.Errorf("the sealed state shows its answers in clear text as a substring: %s", sealed)
	}
	got, err := s.open(sealed, stateNow)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Errorf("opened %+v, sealed %+v", got, st)
	}

	// Another sealer with the same key opens it (servers sharing a key);
	// one with another key, or a random one, does not.
	if _, err := newStateSealer(stateTestKey, nil).open(sealed, stateNow); err != nil {
		t.Errorf("same key: %v", err)
	}
	other := append([]byte(nil), stateTestKey...)
	other[0] ^= 1
	_, err = newStateSealer(other, nil).open(sealed, stateNow)
	refusedSaying(t, err, "integrity")
	_, err = newStateSealer(nil, nil).open(sealed, stateNow)
	refusedSaying(t, err, "integrity")
}

func TestStateKeyIsCopied(t *testing.T) {
	key := append([]byte(nil), stateTestKey...)
	s := newStateSealer(key, nil)
	sealed := mustSeal(t, s, sampleState("n1"))
	key[0] ^= 0xff // the caller's slice changes afterwards
	if _, err := s.open(sealed, stateNow); err != nil {
		t.Fatalf("the sealer shares its caller's key slice: %v", err)
	}
}

func TestStateEverySingleByteChangeIsRefused(t *testing.T) {
	s := newStateSealer(stateTestKey, nil)
	sealed := mustSeal(t, s, sampleState("n1"))
	b := []byte(sealed)
	tried := 0
	for i := range b {
		orig := b[i]
		for v := 0; v < 256; v++ {
			if byte(v) == orig {
				continue
			}
			b[i] = byte(v)
			if _, err := s.open(string(b), stateNow); err == nil {
				t.Fatalf("byte %d changed from %q to %q: accepted", i, orig, byte(v))
			}
			tried++
		}
		b[i] = orig
	}
	// Truncations and extensions too.
	for n := range len(sealed) {
		if _, err := s.open(sealed[:n], stateNow); err == nil {
			t.Fatalf("truncated to %d bytes: accepted", n)
		}
	}
	for _, suffix := range []string{"A", "=", ".", "\n", "AA"} {
		if _, err := s.open(sealed+suffix, stateNow); err == nil {
			t.Fatalf("extended with %q: accepted", suffix)
		}
	}
	// Line breaks anywhere (the base64 decoder would skip them): a state has
	// one spelling.
	for i := range len(sealed) + 1 {
		for _, ins := range []string{"\n", "\r", "\r\n"} {
			if _, err := s.open(sealed[:i]+ins+sealed[i:], stateNow); err == nil {
				t.Fatalf("%q inserted at %d: accepted", ins, i)
			}
		}
	}
	// None of that spent the state.
	if _, err := s.open(sealed, stateNow); err != nil {
		t.Fatalf("after %d refused variants, the genuine state: %v", tried, err)
	}
}

func TestStateRefusesWhatItDidNotSeal(t *testing.T) {
	s := newStateSealer(stateTestKey, nil)
	sealedPayload := func(payload []byte) string {
		return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload))
	}
	cases := []struct{ sealed, want string }{
		{"", "not a state"},
		{"abc", "not a state"},
		{".", "integrity"},
		{"e30.", "integrity"},
		{"e30=." + base64.RawURLEncoding.EncodeToString(s.mac([]byte("{}"))), "integrity"}, // padded
		{sealedPayload([]byte(`{}`)), "malformed"},
		{sealedPayload([]byte(`not json`)), "malformed"},
		{sealedPayload([]byte(`{"v":2,"n":"x","e":9999999999}`)), "malformed"},
		{sealedPayload([]byte(`{"v":1,"e":9999999999}`)), "malformed"},
		{strings.Repeat("A", MaxRequestState+1), "over the limit"},
	}
	for _, tc := range cases {
		_, err := s.open(tc.sealed, stateNow)
		refusedSaying(t, err, tc.want)
	}
	// A MAC over the payload alone (no domain prefix) is not this sealer's.
	payload, _ := json.Marshal(sampleState("n1"))
	_, err := s.open(base64.RawURLEncoding.EncodeToString(payload)+"."+base64.RawURLEncoding.EncodeToString(payload[:32]), stateNow)
	refusedSaying(t, err, "integrity")
}

func TestStateExpiry(t *testing.T) {
	s := newStateSealer(stateTestKey, nil)
	st := sampleState("n1")
	sealed := mustSeal(t, s, st)
	expires := time.Unix(st.Expires, 0)

	_, err := s.open(sealed, expires.Add(time.Second))
	refusedSaying(t, err, "expired")
	_, err = s.open(sealed, expires.Add(24*time.Hour))
	refusedSaying(t, err, "client_wait")
	// An expired state was not spent: within its time it opens (a clock
	// that went back, say), once.
	if _, err := s.open(sealed, expires); err != nil {
		t.Fatalf("at its expiry second: %v", err)
	}
	_, err = s.open(sealed, expires.Add(-time.Minute))
	refusedSaying(t, err, "already used")
}

func TestStateSingleUse(t *testing.T) {
	s := newStateSealer(stateTestKey, nil)
	sealed := mustSeal(t, s, sampleState("n1"))
	if _, err := s.open(sealed, stateNow); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := s.open(sealed, stateNow)
		refusedSaying(t, err, "already used")
	}
	// A state with the same nonce sealed afresh is the same state.
	_, err := s.open(mustSeal(t, s, sampleState("n1")), stateNow)
	refusedSaying(t, err, "already used")
	// Another nonce is another state.
	if _, err := s.open(mustSeal(t, s, sampleState("n2")), stateNow); err != nil {
		t.Fatal(err)
	}
}

func TestStateSealRefusesOversize(t *testing.T) {
	s := newStateSealer(stateTestKey, nil)
	st := sampleState("n1")
	st.Answers = []answer{{asked: asked{Key: "k", Method: "elicitation/create"},
		Result: json.RawMessage(`"` + strings.Repeat("x", MaxRequestState) + `"`)}}
	if _, err := s.seal(st); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("seal of an oversize state: %v", err)
	}
}

func TestUsedStatesAreBounded(t *testing.T) {
	s := newStateSealer(stateTestKey, nil)
	now := stateNow.Unix()
	// Fill it with live states, each expiring a second after the last.
	for i := range maxUsedStates {
		if !s.spend(fmt.Sprint("live", i), now+int64(10+i), stateNow) {
			t.Fatalf("nonce %d refused", i)
		}
	}
	if len(s.used) != maxUsedStates {
		t.Fatalf("%d remembered, want %d", len(s.used), maxUsedStates)
	}
	// Full of live states: a new one is still accepted, the one closest to
	// expiry forgotten, and the set never grows.
	for i := range 20 {
		if !s.spend(fmt.Sprint("more", i), now+int64(10+maxUsedStates+i), stateNow) {
			t.Fatalf("a new state was refused when the set was full")
		}
		if len(s.used) > maxUsedStates {
			t.Fatalf("%d remembered, over the bound of %d", len(s.used), maxUsedStates)
		}
		if _, still := s.used[fmt.Sprint("live", i)]; still {
			t.Fatalf("live%d, the closest to expiry, was not the one forgotten", i)
		}
		if _, still := s.used[fmt.Sprint("live", i+1)]; !still {
			t.Fatalf("live%d was forgotten before its time", i+1)
		}
	}
	// The newest are remembered: replaying them is refused.
	if s.spend("more19", now+1000, stateNow) {
		t.Fatal("a remembered nonce was accepted again")
	}
	// Once they have all expired, the next spend sweeps them all.
	later := time.Unix(now+int64(10+maxUsedStates+100), 0)
	if !s.spend("fresh", later.Unix()+60, later) {
		t.Fatal("fresh nonce refused")
	}
	if len(s.used) != 1 {
		t.Fatalf("%d remembered after every other state expired, want 1", len(s.used))
	}
}

func TestUsedStatesSweepKeepsTheLive(t *testing.T) {
	s := newStateSealer(stateTestKey, nil)
	now := stateNow.Unix()
	for i := range maxUsedStates {
		exp := now - 1 // expired
		if i%2 == 0 {
			exp = now + 60
		}
		s.spend(fmt.Sprint("n", i), exp, stateNow)
	}
	if !s.spend("new", now+60, stateNow) {
		t.Fatal("refused")
	}
	if want := maxUsedStates/2 + 1; len(s.used) != want {
		t.Fatalf("%d remembered, want %d (the live half and the new one)", len(s.used), want)
	}
	for i := 0; i < maxUsedStates; i += 2 {
		if s.spend(fmt.Sprint("n", i), now+60, stateNow) {
			t.Fatalf("live nonce n%d forgotten by the sweep", i)
		}
	}
}

func TestDigestIgnoresLayout(t *testing.T) {
	a := digest([]byte(`{"b":1,"a":[1,2,{"y":true,"x":null}]}`))
	b := digest([]byte(" {\n\"a\": [1, 2, {\"x\": null, \"y\": true}], \"b\": 1}\t"))
	if a != b {
		t.Errorf("digest depends on layout: %s vs %s", a, b)
	}
	for _, other := range []string{`{"b":2,"a":[1,2,{"y":true,"x":null}]}`, `{"a":[1,2,{"y":true,"x":null}]}`, `{}`, `null`, ``} {
		if digest([]byte(other)) == a {
			t.Errorf("digest of %s equals that of another value", other)
		}
	}
	// Parts are separated: ("ab","c") is not ("a","bc").
	if digest([]byte(`"ab"`), []byte(`"c"`)) == digest([]byte(`"a"`), []byte(`"bc"`)) {
		t.Error("digest parts run together")
	}
}

// FuzzOpenState: open never panics, and accepts nothing but the states this
// sealer sealed.
func FuzzOpenState(f *testing.F) {
	seeder := newStateSealer(stateTestKey, nil)
	genuine := map[string]bool{}
	for i, st := range []*requestState{sampleState("seed1"), {Version: 1, Nonce: "seed2", Expires: stateNow.Unix()}} {
		sealed := mustSeal(f, seeder, st)
		genuine[sealed] = true
		f.Add(sealed)
		body, sig, _ := strings.Cut(sealed, ".")
		f.Add(body + "." + sig[:len(sig)-1])
		f.Add(sig + "." + body)
		f.Add(body)
		f.Add(fmt.Sprintf("%s.%s%d", body, sig, i))
	}
	f.Add("")
	f.Add(".")
	f.Add("..")
	f.Add("e30.e30")
	f.Fuzz(func(t *testing.T, sealed string) {
		s := newStateSealer(stateTestKey, nil)
		st, err := s.open(sealed, stateNow)
		if err != nil {
			var es *errState
			if !errors.As(err, &es) {
				t.Fatalf("refusal %v is not an errState", err)
			}
			return
		}
		if !genuine[sealed] {
			t.Fatalf("accepted a state it never sealed: %q", sealed)
		}
		// What opens seals to the very same bytes.
		again, err := s.seal(st)
		if err != nil || again != sealed {
			t.Fatalf("resealed to %q (%v)", again, err)
		}
		if _, err := s.open(sealed, stateNow); err == nil {
			t.Fatal("opened twice")
		}
		if !bytes.Equal([]byte(sealed), []byte(again)) {
			t.Fatal("unreachable")
		}
	})
}

// ledger is a SpentStates shared by sealers standing for replicas.
type ledger struct {
	mu    sync.Mutex
	spent map[string]bool
	err   error
}

func (l *ledger) Spend(_ context.Context, nonce string, _ time.Time) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return false, l.err
	}
	if l.spent[nonce] {
		return false, nil
	}
	l.spent[nonce] = true
	return true, nil
}

// TestStateSpentAcrossReplicas: with a shared ledger, a state spent by one
// replica is refused by another; without one it would be accepted once per
// replica. A ledger that cannot answer refuses the state.
func TestStateSpentAcrossReplicas(t *testing.T) {
	shared := &ledger{spent: map[string]bool{}}
	a, b := newStateSealer(stateTestKey, shared), newStateSealer(stateTestKey, shared)
	sealed := mustSeal(t, a, sampleState("replicated"))
	if _, err := a.open(sealed, stateNow); err != nil {
		t.Fatal(err)
	}
	_, err := b.open(sealed, stateNow)
	refusedSaying(t, err, "already used: each requestState is accepted once (here or by another replica)")

	shared.err = errors.New("database down")
	_, err = b.open(mustSeal(t, a, sampleState("unchecked")), stateNow)
	refusedSaying(t, err, "could not be checked against the replicas' spent states: database down")
}

// A client that spends a flood of fresh states must not push a spent one
// (a person's "yes") out of the set and then replay it: once a live state
// is forgotten, no state expiring by then is accepted, and the refusal says
// why; states issued after still are, once.
func TestForgottenStatesAreNotAcceptedAgain(t *testing.T) {
	s := newStateSealer(stateTestKey, nil)
	yes := sampleState("yes")
	yes.Expires = stateNow.Add(time.Minute).Unix()
	sealed := mustSeal(t, s, yes)
	if _, err := s.open(sealed, stateNow); err != nil {
		t.Fatal(err)
	}
	// The flood: fresh states, each expiring after it, until "yes" is the
	// one forgotten.
	for i := range maxUsedStates {
		if !s.spend(fmt.Sprint("flood", i), yes.Expires+1+int64(i), stateNow) {
			t.Fatalf("fresh state %d refused", i)
		}
	}
	if _, still := s.used["yes"]; still {
		t.Fatal("the flood did not push the spent state out; the test proves nothing")
	}
	_, err := s.open(sealed, stateNow)
	refusedSaying(t, err, "too old to tell whether it was used")
	// A state sealed afresh with the same nonce is the same state.
	_, err = s.open(mustSeal(t, s, yes), stateNow)
	refusedSaying(t, err, "too old to tell whether it was used")
	// One issued after the flood is accepted, once.
	next := sampleState("next")
	next.Expires = yes.Expires + int64(maxUsedStates) + 10
	sealedNext := mustSeal(t, s, next)
	if _, err := s.open(sealedNext, stateNow); err != nil {
		t.Fatalf("a state issued after the flood: %v", err)
	}
	_, err = s.open(sealedNext, stateNow)
	refusedSaying(t, err, "already used")
	if len(s.used) > maxUsedStates {
		t.Fatalf("%d remembered, over the bound of %d", len(s.used), maxUsedStates)
	}
}
