package lsp

import (
	"context"
	"runtime"
	"testing"
)

// TestServersReportMemory: a running server is listed with its pid and,
// on Linux, the resident memory of its process group; a stopped one is
// not listed.
func TestServersReportMemory(t *testing.T) {
	e := newFakeEnv(t)
	m := newManager(t, Config{Languages: e.languages("ok")})
	if got := m.Servers(); len(got) != 0 {
		t.Fatalf("servers before any query: %+v", got)
	}
	if _, err := m.DocumentSymbols(context.Background(), e.target(), "a.fk"); err != nil {
		t.Fatal(err)
	}
	got := m.Servers()
	if len(got) != 1 || got[0].Language != "fake" || got[0].Root != e.root || got[0].PID != serverPID(m, e.target()) || got[0].Started.IsZero() {
		t.Fatalf("servers: %+v", got)
	}
	if runtime.GOOS == "linux" && got[0].Memory < 1<<20 {
		t.Fatalf("memory of a running Go process: %d bytes", got[0].Memory)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := m.Servers(); len(got) != 0 {
		t.Fatalf("servers after Close: %+v", got)
	}
}

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		pgrp int
		rss  uint64
		ok   bool
	}{
		{"4242 (node) S 1 4240 4240 0 -1 4194560 1 0 0 0 5 1 0 0 20 0 11 0 100 1000 2500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0", 4240, 2500, true},
		// A name with spaces and parentheses: fields count from the last ")".
		{"7 (a) b) (c) R 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 10 33 0", 9, 33, true},
		{"7 (x) R 1 9", 0, 0, false},
		{"no paren", 0, 0, false},
		{"7 (x) R 1 nine 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 10 33", 0, 0, false},
	} {
		pgrp, rss, ok := parseProcStat([]byte(tc.line))
		if pgrp != tc.pgrp || rss != tc.rss || ok != tc.ok {
			t.Errorf("%q: %d %d %v, want %d %d %v", tc.line, pgrp, rss, ok, tc.pgrp, tc.rss, tc.ok)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("4242 (node) S 1 4240 4240 0 -1 4194560 1 0 0 0 5 1 0 0 20 0 11 0 100 1000 2500 0"))
	f.Add([]byte("1 ())) R 1 1 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pgrp, rss, ok := parseProcStat(b)
		if !ok && (pgrp != 0 || rss != 0) {
			t.Fatalf("not ok but %d %d", pgrp, rss)
		}
	})
}
