package ratestore

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/pgtest"
)

var server *pgtest.Server

func TestMain(m *testing.M) {
	server = pgtest.New()
	code := m.Run()
	server.Stop()
	os.Exit(code)
}

func open(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(url, 5*time.Second, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestConcurrentTakesAcrossStores: calls racing from two stores (two
// replicas) of one database take exactly burst tokens between them; the
// refused learn when the next token comes.
func TestConcurrentTakesAcrossStores(t *testing.T) {
	url := server.DB(t)
	stores := []*Store{open(t, url), open(t, url)}
	const burst, callers = 7, 40
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, retry, err := stores[i%2].Take(context.Background(), "tool \"echo\"", 1.0/3600, burst)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				granted.Add(1)
			} else if retry < 50*time.Minute || retry > time.Hour {
				t.Errorf("retry in %s, want about an hour (rate 1/h, the bucket empty)", retry)
			}
		}()
	}
	wg.Wait()
	if n := granted.Load(); n != burst {
		t.Fatalf("%d of %d takes granted, want the burst, %d", n, callers, burst)
	}
	// Another key is another bucket; a token given back is taken again.
	if ok, _, err := stores[0].Take(context.Background(), "tool \"other\"", 1.0/3600, 1); !ok || err != nil {
		t.Errorf("another bucket: %v %v", ok, err)
	}
	if err := stores[1].Give(context.Background(), "tool \"echo\"", 1.0/3600, burst); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := stores[0].Take(context.Background(), "tool \"echo\"", 1.0/3600, burst); !ok || err != nil {
		t.Errorf("after a token was given back: %v %v", ok, err)
	}
	if ok, _, _ := stores[0].Take(context.Background(), "tool \"echo\"", 1.0/3600, burst); ok {
		t.Error("the given-back token was taken twice")
	}
}

// TestNameHidesPassword: the store is named without the URL's password,
// in messages and errors alike.
func TestNameHidesPassword(t *testing.T) {
	s, err := Open("postgres://warden:hunter2@127.0.0.1:1/wd?sslmode=disable", time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Name() != "postgres://warden@127.0.0.1:1/wd" {
		t.Errorf("name %q", s.Name())
	}
	_, _, err = s.Take(context.Background(), "k", 1, 1)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.HasPrefix(err.Error(), "postgres://warden@127.0.0.1:1/wd: ") {
		t.Errorf("take from a closed port: %v", err)
	}
}
