package runtime_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
)

// pingFile writes testdata/ping.wat, the smallest complete tool module
// (docs/abi.md), assembled, to dir, and returns its path. An embedder has
// the .wasm file already.
func pingFile(dir string) string {
	wasm, err := testwasm.Assemble("testdata/ping.wat")
	if err != nil {
		log.Fatal(err)
	}
	path := filepath.Join(dir, "ping.wasm")
	if err := os.WriteFile(path, wasm, 0o644); err != nil {
		log.Fatal(err)
	}
	return path
}

// A Runtime loads a module, lists its tools and calls them. Every failure
// of a call, the guest's or the sandbox's, is an error Result of its kind.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "warden-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// "off" keeps compiled code in memory only; the default is a disk
	// cache under $XDG_CACHE_HOME/warden.
	rt, err := runtime.New(ctx, runtime.Options{CacheDir: "off"})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close(ctx)

	// Limits{} are the defaults: a deadline, memory, fuel and output bound.
	m, err := rt.LoadFile(ctx, pingFile(dir), runtime.Limits{})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range m.Tools() {
		fmt.Printf("%s.%s: %s\n", m.Name(), t.Descriptor.Name, t.Descriptor.Description)
	}

	res := m.Tools()[0].Call(ctx, runtime.CallRequest{})
	fmt.Println(res.IsError, res.Content[0].Text)

	res = m.Tools()[0].Call(ctx, runtime.CallRequest{Arguments: []byte(`[1, 2]`)})
	fmt.Println(res.IsError, res.Error.Kind)
	// Output:
	// ping.ping: Answers pong.
	// false pong
	// true invalid_arguments
}

// Open lists a module from its descriptor manifest, cached beside the
// compiled code, when one was stored for the same bytes and limits: a warm
// start lists every tool without compiling any module, and each module is
// loaded at its first call.
func ExampleRuntime_Open() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "warden-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := pingFile(dir)
	cache := filepath.Join(dir, "cache")

	for _, start := range []string{"cold", "warm"} {
		rt, err := runtime.New(ctx, runtime.Options{CacheDir: cache})
		if err != nil {
			log.Fatal(err)
		}
		m, err := rt.OpenFile(ctx, "ping", path, runtime.Limits{}, runtime.OpenOptions{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s start: %d tool(s), loaded %v\n", start, len(m.Tools()), m.Loaded())
		res := m.Tools()[0].Call(ctx, runtime.CallRequest{})
		fmt.Printf("%s start: %s, loaded %v\n", start, res.Content[0].Text, m.Loaded())
		rt.Close(ctx)
	}
	// Output:
	// cold start: 1 tool(s), loaded true
	// cold start: pong, loaded true
	// warm start: 1 tool(s), loaded false
	// warm start: pong, loaded true
}
