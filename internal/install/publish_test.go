package install_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/internal/wasmfile"
)

func TestInspect(t *testing.T) {
	ctx := context.Background()
	src := testwasm.BuildGoFile(t, "../../tools-wasm/echo")
	wasm, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, _ := startApp(t, dir, "tools:\n  dir: tools\n  cache_dir: "+userCacheDir+"\n", nil)

	// A file name that is no module name still loads.
	odd := filepath.Join(dir, "my echo (v1).wasm")
	if err := os.WriteFile(odd, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := a.Installer().Inspect(ctx, odd)
	if err != nil {
		t.Fatal(err)
	}
	if in.Module != "my_echo__v1_" || in.SHA256 != sha(wasm) || in.Size != len(wasm) || string(in.Bytes()) != string(wasm) ||
		len(in.Tools) != 1 || in.Tools[0].Name != "echo" || in.Source != odd {
		t.Errorf("inspection %+v", in)
	}
	if _, err := os.Stat(filepath.Join(dir, "tools")); err == nil {
		t.Error("inspect created the tools dir")
	}

	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, c := range map[string]struct {
		path string
		want error
		msg  string
	}{
		"not wasm":  {write("script.wasm", []byte("#!/bin/sh\n")), wasmfile.ErrNotWasm, "\\0asm"},
		"component": {write("comp.wasm", []byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0}), wasmfile.ErrComponent, "component"},
		"no tool":   {write("bare.wasm", []byte{0, 'a', 's', 'm', 1, 0, 0, 0}), nil, "cannot serve"},
		"missing":   {filepath.Join(dir, "missing.wasm"), os.ErrNotExist, "missing.wasm"},
		"truncated": {write("half.wasm", wasm[:len(wasm)/2]), nil, "cannot serve"},
	} {
		_, err := a.Installer().Inspect(ctx, c.path)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v mentioning %q", name, err, c.want, c.msg)
		}
	}
}

func TestPublishName(t *testing.T) {
	for in, want := range map[string]string{
		"dir/echo.wasm": "echo", "a b.wasm": "a_b", ".hidden.wasm": "hidden", "-flag.wasm": "flag",
		"___.wasm": "module", "x/.wasm": "module", strings.Repeat("é", 100) + ".wasm": "module",
	} {
		if got := install.PublishName(in); got != want {
			t.Errorf("publishName(%q) = %q, want %q", in, got, want)
		}
	}
}
