package tasks

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/principal"
)

func TestNewIDParses(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if got, err := ParseID(id); err != nil || got != id {
			t.Fatalf("ParseID(%q) = %q, %v", id, got, err)
		}
		if seen[id] {
			t.Fatalf("id %s made twice", id)
		}
		seen[id] = true
	}
}

func TestParseIDRefuses(t *testing.T) {
	id := NewID()
	for _, s := range []string{"", id[:IDLen-1], id + "0", strings.ToUpper(id), "../" + id[3:], id[:IDLen-1] + "g",
		id[:IDLen-1] + "\x00", " " + id[1:], id[:IDLen-1] + "/", "０" + id[3:]} {
		if _, err := ParseID(s); !errors.Is(err, ErrBadID) || err.Error() != "not a task id" {
			t.Errorf("ParseID(%q): %v", s, err)
		}
	}
}

// FuzzParseID: whatever a client sends, ParseID accepts exactly the ids
// NewID makes: 32 lowercase hex digits, usable as a file name as is.
func FuzzParseID(f *testing.F) {
	f.Add(NewID())
	f.Add("")
	f.Add("../../etc/passwd")
	f.Add(strings.Repeat("A", IDLen))
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseID(s)
		if err != nil {
			if !errors.Is(err, ErrBadID) || got != "" {
				t.Fatalf("ParseID(%q) = %q, %v", s, got, err)
			}
			return
		}
		if got != s || len(s) != IDLen || strings.Trim(s, "0123456789abcdef") != "" {
			t.Fatalf("ParseID accepted %q", s)
		}
	})
}

// TestOwnerOfNeverShared: principals that differ in anything that names
// them get different keys, however their subjects are spelled: separators
// in a subject cannot make it pose as another issuer's, another way's or a
// local peer's.
func TestOwnerOfNeverShared(t *testing.T) {
	oauth := func(iss, sub string) principal.Principal {
		return principal.Principal{Via: principal.ViaOAuth, Issuer: iss, Subject: sub}
	}
	cases := []struct {
		p    principal.Principal
		peer string
	}{
		{oauth("https://a", "b:c"), ""},
		{oauth("https://a:b", "c"), ""},
		{oauth("https://a:b:c", ""), ""},
		{oauth("3:https://a", "b"), ""},
		{oauth("", "token"), ""},
		{oauth("", "local:x"), ""},
		{oauth("", ""), ""},
		{oauth("a", "1:a:b"), ""},
		{oauth("1:a:b", "a"), ""},
		{principal.Principal{Via: principal.ViaToken, Subject: "token"}, ""},
		{principal.Local, "x"},
		{principal.Local, "oauth:1:a:b"},
		{principal.Local, PeerHTTP},
		{principal.Local, ""},
		{principal.Principal{Via: "mtls", Subject: "a"}, ""},
		{principal.Principal{Via: "mtls:1", Subject: "a"}, ""},
	}
	seen := map[string]int{}
	for i, c := range cases {
		key := OwnerOf(c.p, c.peer)
		if j, dup := seen[key]; dup {
			t.Errorf("cases %d and %d share the owner key %q", j, i, key)
		}
		seen[key] = i
	}
	// What does not name a principal does not change its key: scopes and
	// groups vary between tokens of one subject.
	a := oauth("https://idp", "alice")
	b := a
	b.Scopes, b.Groups = []string{"tools"}, []string{"ops"}
	if OwnerOf(a, "p1") != OwnerOf(b, "p2") {
		t.Error("one OAuth subject got two keys")
	}
	if got := OwnerOf(a, ""); got != "oauth:11:https://idp:alice" {
		t.Errorf("OwnerOf = %q", got)
	}
	tokenA, tokenB := principal.Principal{Via: principal.ViaToken, Subject: "token"}, principal.Principal{Via: principal.ViaToken, Subject: "other"}
	if OwnerOf(tokenA, "p1") != OwnerOf(tokenB, "p2") {
		t.Error("the static token's holder got two keys")
	}
	if OwnerOf(principal.Local, "stdio-1") == OwnerOf(principal.Local, "stdio-2") {
		t.Error("two stdio peers share a key")
	}
}

// FuzzOwnerOf: two OAuth principals share a key only when issuer and
// subject are both the same.
func FuzzOwnerOf(f *testing.F) {
	f.Add("https://a", "b:c", "https://a:b", "c")
	f.Add("1:a", "b", "1", "a:b")
	f.Fuzz(func(t *testing.T, iss1, sub1, iss2, sub2 string) {
		k1 := OwnerOf(principal.Principal{Via: principal.ViaOAuth, Issuer: iss1, Subject: sub1}, "")
		k2 := OwnerOf(principal.Principal{Via: principal.ViaOAuth, Issuer: iss2, Subject: sub2}, "")
		if (k1 == k2) != (iss1 == iss2 && sub1 == sub2) {
			t.Fatalf("(%q, %q) and (%q, %q): keys %q and %q", iss1, sub1, iss2, sub2, k1, k2)
		}
		if l := OwnerOf(principal.Local, sub1); l == k1 || l == "token" {
			t.Fatalf("local peer %q has key %q", sub1, l)
		}
	})
}

func TestCursorRoundTrip(t *testing.T) {
	task := Task{ID: NewID(), Created: time.Date(2026, 7, 28, 1, 2, 3, 4000, time.UTC)}
	p, err := parseCursor(encodeCursor(&task))
	if err != nil || !p.created.Equal(task.Created) || p.id != task.ID {
		t.Fatalf("cursor round trip: %+v, %v", p, err)
	}
	next := task
	next.ID = strings.Repeat("f", IDLen)
	if !p.after(&next) || p.after(&task) {
		t.Error("after is not List's order")
	}
}

// FuzzParseCursor: a cursor comes from a client; parseCursor accepts only
// what encodeCursor makes, and what it accepts encodes back to itself.
func FuzzParseCursor(f *testing.F) {
	task := Task{ID: NewID(), Created: time.Date(2026, 7, 28, 1, 2, 3, 4000, time.UTC)}
	f.Add(encodeCursor(&task))
	f.Add("")
	f.Add("dDEuMC4w")
	f.Add(strings.Repeat("A", 300))
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseCursor(s)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("parseCursor(%q): %v", s, err)
			}
			return
		}
		if again := encodeCursor(&Task{ID: p.id, Created: p.created}); again != s {
			t.Fatalf("parseCursor(%q) = %+v, which encodes as %q", s, p, again)
		}
	})
}
