package config

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"
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
			t.Fatalf("Load hangs on %q:\n%s", body, buf[:goruntime.Stack(buf, true)])
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
			_, _ = c.Grants(name, name)
			_ = c.ModuleLimits(name)
		}
	})
}
