//go:build unix

package secrets

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadFIFORefused: a secret file that is a FIFO is refused at once.
// Opening it would block until a writer came, and every reload reads every
// secret, so one such entry would hang reloads, `warden secret list` and
// the calls that read it.
func TestReadFIFORefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := (Source{File, p}).Read()
	if err == nil || !strings.HasSuffix(err.Error(), p+" is not a regular file") {
		t.Fatalf("Read of a FIFO: %v", err)
	}
}
