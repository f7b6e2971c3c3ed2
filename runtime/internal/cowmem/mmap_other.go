//go:build !linux

package cowmem

import (
	"errors"
	"os"
	"unsafe"
)

var osPage = os.Getpagesize()

var errUnsupported = errors.New("cowmem: copy-on-write memory needs Linux")

type sharedBacking struct{ copyBacking }

func newSharedBacking([]byte) (*sharedBacking, error) { return nil, errUnsupported }

func reserve(int) (unsafe.Pointer, error)     { return nil, errUnsupported }
func commit(unsafe.Pointer, int, int) error   { return errUnsupported }
func mapImage(unsafe.Pointer, int, int) error { return errUnsupported }
func discard(unsafe.Pointer, int, int) error  { return errUnsupported }
func unmap(unsafe.Pointer, int)               {}
