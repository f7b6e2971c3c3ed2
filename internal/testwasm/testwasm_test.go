package testwasm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// exports lists the export names of a wasm binary. It reads only what it
// needs and fails on anything malformed, which is all a test needs.
func exports(wasm []byte) ([]string, error) {
	if !bytes.HasPrefix(wasm, []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, errors.New("not a wasm binary")
	}
	r := bytes.NewReader(wasm[8:])
	for r.Len() > 0 {
		id, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		size, err := binary.ReadUvarint(r)
		if err != nil || size > uint64(r.Len()) {
			return nil, errors.New("bad section size")
		}
		body := make([]byte, size)
		r.Read(body)
		if id != 7 {
			continue
		}
		br := bytes.NewReader(body)
		n, _ := binary.ReadUvarint(br)
		var names []string
		for range n {
			l, err := binary.ReadUvarint(br)
			if err != nil || l > uint64(br.Len()) {
				return nil, errors.New("bad export name")
			}
			name := make([]byte, l)
			br.Read(name)
			br.ReadByte() // kind
			if _, err := binary.ReadUvarint(br); err != nil {
				return nil, err
			}
			names = append(names, string(name))
		}
		return names, nil
	}
	return nil, errors.New("no export section")
}

// TestBuildGoFixtures builds every Go guest the runtime's tests use, so a
// fixture that stops compiling fails here, naming itself.
func TestBuildGoFixtures(t *testing.T) {
	dirs, err := filepath.Glob("../../runtime/testdata/goguest/*")
	if err != nil || len(dirs) < 16 {
		t.Fatalf("found %d fixtures (%v); want at least 16", len(dirs), err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			names, err := exports(BuildGo(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"memory", "_initialize", "warden_abi_version", "warden_alloc", "warden_describe", "warden_call"} {
				if !slices.Contains(names, want) {
					t.Errorf("exports %v lack %s", names, want)
				}
			}
			if slices.Contains(names, "_start") {
				t.Errorf("exports _start: built as a command, not a reactor")
			}
		})
	}
}

func TestBuildGoCaches(t *testing.T) {
	first, err := buildGoFile("../../tools-wasm/echo")
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	inflight.Clear() // as a new test process would start
	second, err := buildGoFile("../../tools-wasm/echo")
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(second)
	if first != second || !before.ModTime().Equal(after.ModTime()) {
		t.Fatalf("rebuilt an unchanged package: %s (%v) then %s (%v)", first, before.ModTime(), second, after.ModTime())
	}
}

// TestBuildGoKeyFollowsContent proves the cache key covers the package's own
// files: a cached module must never be served for changed source.
func TestBuildGoKeyFollowsContent(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module scratch\n\ngo 1.24\n")
	write("main.go", "package main\n\nfunc main() {}\n")
	k1, err := contentKey(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	write("main.go", "package main\n\nfunc main() { println() }\n")
	k2, err := contentKey(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if k1 == k2 {
		t.Fatal("changing main.go did not change the cache key")
	}
}

// TestBuildGoVarsDistinct: link-time variables make distinct modules from one
// source, cached apart, and the same variables reuse the same file.
func TestBuildGoVarsDistinct(t *testing.T) {
	const pkg = "../../bench/testdata/tool"
	a, err := buildGoVariant(pkg, map[string]string{"name": "tool_a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := buildGoVariant(pkg, map[string]string{"name": "tool_b"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := buildGoVariant(pkg, map[string]string{"name": "tool_a"})
	if err != nil {
		t.Fatal(err)
	}
	if a == b || a != again {
		t.Fatalf("paths %s, %s, %s: want the two variants apart and the repeat cached", a, b, again)
	}
	wa, _ := os.ReadFile(a)
	wb, _ := os.ReadFile(b)
	if !bytes.Contains(wa, []byte("tool_a")) || bytes.Contains(wa, []byte("tool_b")) || !bytes.Contains(wb, []byte("tool_b")) {
		t.Fatal("the variable's value is not what each module carries")
	}
	if _, err := buildGoVariant(pkg, map[string]string{"name": "two words"}); err == nil || !strings.Contains(err.Error(), `"two words"`) {
		t.Fatalf("a value with a space: got %v, want an error naming it", err)
	}
}

func TestBuildGoReportsCompilerOutput(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module broken\n\ngo 1.24\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { undefinedThing() }\n"), 0o644)
	_, err := buildGo(dir)
	if err == nil || !strings.Contains(err.Error(), "undefined: undefinedThing") {
		t.Fatalf("err = %v; want the compiler's message", err)
	}
}

func TestWAT(t *testing.T) {
	wasm := WATString(t, `(module (func (export "f") (result i32) (i32.const 1)))`)
	names, err := exports(wasm)
	if err != nil || !slices.Equal(names, []string{"f"}) {
		t.Fatalf("exports = %v, %v", names, err)
	}
	bad := filepath.Join(t.TempDir(), "bad.wat")
	os.WriteFile(bad, []byte("(module (func (export \"f\") (result i32)))"), 0o644)
	if _, err := assemble(bad); err == nil || !strings.Contains(err.Error(), "wat2wasm") {
		t.Fatalf("invalid WAT: err = %v", err)
	}
}
