package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/tool"
)

// FuzzLoad: any bytes as config.yaml either load into a config that
// validates or fail with an error naming the file; Load never panics.
func FuzzLoad(f *testing.F) {
	root, err := os.ReadFile("../config.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(root))
	f.Add("tools: {grants: {a: {fs: {read: [src]}, net: [api.github.com], memory: read}}}")
	f.Add("tools: {defaults: {timeout: 1s, memory: 1MiB, isolation: call}, limits: {x: {fuel: 5}}}")
	f.Add("server: {page_size: -1}\nenv: {values: {K: {from_env: HOME}}}")
	f.Add("project: {roots: {notes: /tmp}}\nsecurity: {deny: ['**/x/**']}")
	f.Add("tools: {grants: {Echo: {module: Echo-v2.1, env: [X]}, b: {module: b}}, pins: {echo-v2.1: " + strings.Repeat("0", 64) + "}}")
	f.Add("tools: {grants: {a: {module: [x]}, '..': {}}}")
	f.Add("tools: {pins: {m: " + strings.Repeat("a", 64) + "}, sources: {m: {ref: 'oci://ghcr.io/a/m:1', digest: 'sha256:" + strings.Repeat("b", 64) + "'}}, fetch: {max_size: 1MiB, redirect_hosts: [x]}}")
	f.Add("security: {signature_mode: warn, signatures: {'ghcr.io/a/*': {identity_regexp: '.+', issuer: i}, '*': {key: k.pub}}}")
	f.Add("tasks: {backend: file, max_per_client: 2, max_total: 3, max_result: 1KiB, ttl: 1m, max_ttl: 2m, poll_interval: 1s, lease: 10s}")
	f.Add("tasks: {max_per_client: 2, max_total: 3, max_records_per_client: 4, max_records: 3}")
	f.Add("{{{")
	f.Fuzz(func(t *testing.T, body string) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		type loaded struct {
			c   *Config
			err error
		}
		done := make(chan loaded, 1)
		go func() {
			c, err := Load(path)
			done <- loaded{c, err}
		}()
		var l loaded
		select {
		case l = <-done:
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<20)
			t.Fatalf("Load hangs on %q:\n%s", body, buf[:runtime.Stack(buf, true)])
		}
		c, err := l.c, l.err
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Load returned a config that does not validate: %v", err)
		}
		for name := range c.Tools.Grants {
			// A grant applies to its own module only, and the module it
			// names is a valid module name.
			bound, _, ok := c.GrantModule(name)
			if !ok || !tool.ValidName(bound) {
				t.Fatalf("grant %q is bound to %q (%v)", name, bound, ok)
			}
			if _, err := c.Grants(name, bound); err != nil {
				t.Fatalf("grant %q refused to its own module %q: %v", name, bound, err)
			}
			if g, err := c.Grants(name, bound+"x"); !g.IsZero() || err == nil {
				t.Fatalf("grant %q bound to %q applies to module %q: %+v", name, bound, bound+"x", g)
			}
			_ = c.ModuleLimits(name)
		}
	})
}
