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

type pageFlags = *os.File

func openPageFlags() pageFlags { return nil }

func privatePages(pageFlags, unsafe.Pointer, int, []byte, func(int)) error { return errUnsupported }
