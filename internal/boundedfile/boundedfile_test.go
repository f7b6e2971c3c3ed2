package boundedfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 101), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p, 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("101 bytes under a bound of 100: %v", err)
	}
	if b, err := Read(p, 101); err != nil || len(b) != 101 {
		t.Errorf("101 bytes under a bound of 101: %d %v", len(b), err)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none"), 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
