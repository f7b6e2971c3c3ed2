package secrets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"
)

// TestReadFile: a file's one trailing newline is dropped (echo, editors
// and `kubectl create secret --from-file` differ); an empty, oversized,
// missing or non-regular file is an error naming the path, never content.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for body, want := range map[string]string{"tok\n": "tok", "tok\r\n": "tok", "tok": "tok", "tok\n\n": "tok\n", " tok ": " tok "} {
		if got, err := (Source{File, write("f", body)}).Read(); err != nil || got != want {
			t.Errorf("Read of %q = %q, %v; want %q", body, got, err, want)
		}
	}
	big := write("big", strings.Repeat("s3cr3t", MaxSize))
	for path, want := range map[string]string{
		write("empty", "\n"): "empty is empty",
		big:                  "big is larger than 64 KiB: a secret file holds one value",
		dir:                  "is not a regular file",
		dir + "/none":        "none does not exist: not found",
		write("max", strings.Repeat("a", MaxSize)): "",
	} {
		_, err := (Source{File, path}).Read()
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", path, err)
			}
			continue
		}
		if err == nil || !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v, want it to end %q", path, err, want)
		}
	}
	if _, err := (Source{File, dir + "/none"}).Read(); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing file: %v is not ErrNotFound", err)
	}
}

// TestKeyring against go-keyring's in-memory mock (e2e/serve runs the
// real Secret Service): Store then Read, replacing, and refusals.
func TestKeyring(t *testing.T) {
	keyring.MockInit()
	src := Source{Keyring, "api"}
	if _, err := src.Read(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before Store: %v", err)
	}
	for _, v := range []string{"first-value", "second-value"} {
		if err := Store("api", v); err != nil {
			t.Fatal(err)
		}
		if got, err := src.Read(); err != nil || got != v {
			t.Fatalf("Read = %q, %v; want %q", got, err, v)
		}
	}
	if err := Store("api", ""); err == nil || err.Error() != "the value is empty" {
		t.Fatalf("Store of nothing: %v", err)
	}
	if err := Store("api", strings.Repeat("a", MaxSize+1)); err == nil || err.Error() != "the value is larger than 64 KiB" {
		t.Fatalf("Store of too much: %v", err)
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("WARDEN_TEST_SECRETS_VAR", "v4lue")
	if got, err := (Source{Env, "WARDEN_TEST_SECRETS_VAR"}).Read(); err != nil || got != "v4lue" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if _, err := (Source{Env, "WARDEN_TEST_SECRETS_NEVER"}).Read(); !errors.Is(err, ErrNotFound) || err.Error() != "variable WARDEN_TEST_SECRETS_NEVER is not set: not found" {
		t.Fatalf("unset: %v", err)
	}
	if s := (Source{File, "/run/secrets/x"}).String(); s != "file /run/secrets/x" {
		t.Fatalf("String = %q", s)
	}
}

// TestKeyringTooBig: a value the OS keyring refuses for its size is
// refused in those words, with where to keep it instead, not as a keyring
// that cannot be used.
func TestKeyringTooBig(t *testing.T) {
	keyring.MockInitWithError(keyring.ErrSetDataTooBig)
	defer keyring.MockInit()
	err := Store("cert", strings.Repeat("x", 4000))
	if err == nil || err.Error() != "the value (4000 bytes) is larger than this OS keyring takes (about 3 KB on macOS, 2560 bytes on Windows): keep it in a file (secrets.cert.file) instead" {
		t.Fatalf("Store of a large value: %v", err)
	}
}
