// Package boundedfile reads whole files that must not be larger than a
// bound: a module to publish or install, a key. Reading stops one byte past
// the bound, so a file that grows, or a device that never ends, costs at
// most that much memory.
package boundedfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge marks a file larger than the bound.
var ErrTooLarge = errors.New("file larger than the limit")

// Read returns the contents of path, refusing with ErrTooLarge a file of
// more than max bytes.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: %s is more than %d bytes", ErrTooLarge, path, max)
	}
	return b, nil
}
