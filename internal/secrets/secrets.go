// Package secrets reads the values that config's secrets: entries point
// at: a file (Kubernetes and Docker secrets are files), the OS keyring
// (macOS Keychain, Windows Credential Manager, the Secret Service on
// Linux) or a host environment variable.
//
// A value is read each time it is asked for, never kept: a rotated file
// or keyring entry is what the next read returns. Errors name the source,
// never the value.
package secrets

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/zalando/go-keyring"
)

// MaxSize is the largest value read: a secret is a token, a password or a
// key, and a file that is larger is the wrong file.
const MaxSize = 64 << 10

// KeyringService is the service every keyring entry of warden is stored
// under; the entry's account is the name `warden secret set` was given.
const KeyringService = "warden"

// Kind is where a value is kept.
type Kind string

const (
	File    Kind = "file"
	Keyring Kind = "keyring"
	Env     Kind = "env"
)

// Source is one place a value is read from.
type Source struct {
	Kind Kind
	// Ref is the file's path, the keyring account or the variable's name.
	Ref string
}

// String names the source, never its value: "file /run/secrets/token".
func (s Source) String() string { return string(s.Kind) + " " + s.Ref }

// ErrNotFound is wrapped by Read when the source holds no value: no such
// file, keyring entry or variable.
var ErrNotFound = errors.New("not found")

// Read returns the source's current value. A file's one trailing newline
// (\n or \r\n, as echo and editors leave it) is not part of the value.
func (s Source) Read() (string, error) {
	switch s.Kind {
	case File:
		return readFile(s.Ref)
	case Keyring:
		v, err := keyring.Get(KeyringService, s.Ref)
		if errors.Is(err, keyring.ErrNotFound) {
			return "", fmt.Errorf("no keyring entry %q of service %q (store one with: warden secret set %s): %w", s.Ref, KeyringService, s.Ref, ErrNotFound)
		}
		if err != nil {
			return "", keyringError(err)
		}
		if v == "" {
			return "", fmt.Errorf("keyring entry %q is empty", s.Ref)
		}
		return v, nil
	case Env:
		v, ok := os.LookupEnv(s.Ref)
		if !ok {
			return "", fmt.Errorf("variable %s is not set: %w", s.Ref, ErrNotFound)
		}
		if v == "" {
			return "", fmt.Errorf("variable %s is empty", s.Ref)
		}
		return v, nil
	}
	return "", fmt.Errorf("unknown source kind %q", s.Kind)
}

func readFile(path string) (string, error) {
	// Refuse what is not a regular file before opening it: opening a FIFO
	// blocks until a writer comes, and a reload reads every secret.
	// (Stat follows symlinks: Kubernetes mounts secrets as links.)
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s does not exist: %w", path, ErrNotFound)
	}
	if err != nil {
		return "", err // *PathError: the path and why, no content
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return "", err
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > MaxSize {
		return "", fmt.Errorf("%s is larger than %d KiB: a secret file holds one value", path, MaxSize>>10)
	}
	v := TrimNewline(string(b))
	if v == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return v, nil
}

// TrimNewline drops one trailing "\n" or "\r\n".
func TrimNewline(v string) string {
	v, ok := strings.CutSuffix(v, "\n")
	if ok {
		v = strings.TrimSuffix(v, "\r")
	}
	return v
}

// Store puts value in the keyring as account name of KeyringService,
// replacing what was there.
func Store(name, value string) error {
	if value == "" {
		return errors.New("the value is empty")
	}
	if len(value) > MaxSize {
		return fmt.Errorf("the value is larger than %d KiB", MaxSize>>10)
	}
	if err := keyring.Set(KeyringService, name, value); err != nil {
		if errors.Is(err, keyring.ErrSetDataTooBig) {
			// The keyring works; it takes less than a secret file:
			// about 3 KB on macOS, 2560 bytes on Windows.
			return fmt.Errorf("the value (%d bytes) is larger than this OS keyring takes (about 3 KB on macOS, 2560 bytes on Windows): keep it in a file (secrets.%s.file) instead", len(value), name)
		}
		return keyringError(err)
	}
	return nil
}

// keyringError says which keyring could not be used: on Linux the usual
// cause is no Secret Service in the session (a server, a container).
func keyringError(err error) error {
	return fmt.Errorf("the OS keyring (macOS Keychain, Windows Credential Manager, or on Linux a Secret Service such as GNOME Keyring or KeePassXC on the session D-Bus) cannot be used: %w", err)
}
