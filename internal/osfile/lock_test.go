package osfile

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestTryLock: two opens of one lock file in one process exclude each
// other, deterministically: the second TryLock fails with ErrLocked until
// the first is released, by Unlock or by closing it.
func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b := open(), open()
	if err := TryLock(a); err != nil {
		t.Fatalf("first TryLock: %v", err)
	}
	if err := TryLock(b); !errors.Is(err, ErrLocked) {
		t.Fatalf("second TryLock = %v, want ErrLocked", err)
	}
	if err := Unlock(a); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := TryLock(b); err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	if err := TryLock(a); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while the other holds it = %v, want ErrLocked", err)
	}
	b.Close() // closing releases
	if err := Lock(a); err != nil {
		t.Fatalf("Lock after the holder closed: %v", err)
	}
	c := open()
	if err := TryLock(c); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while Lock holds it = %v, want ErrLocked", err)
	}
}

// TestLockWaits: Lock blocks until the holder lets go. The waiter is
// known to be waiting only by not having returned; the test asserts the
// order of events, not a duration.
func TestLockWaits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	a, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := TryLock(a); err != nil {
		t.Fatal(err)
	}
	var released atomic.Bool
	got := make(chan bool)
	go func() {
		err := Lock(b)
		got <- err == nil && released.Load()
	}()
	released.Store(true)
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if ok := <-got; !ok {
		t.Fatal("Lock returned before the holder released the lock")
	}
}
