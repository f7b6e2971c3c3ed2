// Package capsettest generates capability sets for property tests of
// covering (internal/capset) and of what uses it: entries of every kind in
// every dimension, including internal hosts, other roots, absolute and
// invalid paths, and memory topics that share a prefix without being below
// one another.
package capsettest

import (
	"math/rand/v2"
	"slices"

	"github.com/warden-run/warden/tool"
)

// The universe the generators draw from, per dimension.
var (
	FSPaths  = []string{".", "src", "src/a", "src/a/b.go", "srcx", "docs", "notes:", "notes:x", "notes:x/y", "project:src", "/abs", "/abs/x", "../bad"}
	NetHosts = []string{"*", "*.example.com", "api.example.com", "a.api.example.com", "http://api.example.com:8080", "http://*:8080",
		"127.0.0.1", "http://127.0.0.1:8080", "10.0.0.7", "[::1]", "[fc00::1]", "[fe80::1]", "169.254.169.254", "0.0.0.0",
		"localhost", "api.localhost", "8.8.8.8", "registry.internal", "registry.internal private"}
	EnvKeys      = []string{"HOME", "home", "TOKEN", "PATH"}
	LSPLanguages = []string{"go", "Go", "rust", "python"}
	Levels       = []tool.MemoryAccess{tool.MemoryNone, tool.MemoryRead, tool.MemoryReadWrite}
	Topics       = []string{"notes", "notes/daily", "arch", "arch/db", "archive"}
)

// InternalHosts are net requests that no wildcard may cover.
var InternalHosts = []string{"127.0.0.1", "https://127.0.0.1", "127.0.0.2:8443", "10.0.0.7", "172.16.0.1", "192.168.1.1",
	"[::1]", "[fc00::1]", "[fd12::7]", "169.254.169.254", "[fe80::1]", "0.0.0.0", "[::]", "[::ffff:127.0.0.1]",
	"localhost", "http://localhost:3000", "LocalHost.", "app.localhost", "*.localhost"}

func pick(r *rand.Rand, from []string) []string {
	var out []string
	for _, s := range from {
		if r.IntN(4) == 0 {
			out = append(out, s)
		}
	}
	return out
}

// Caps draws capabilities from the universe.
func Caps(r *rand.Rand) tool.Capabilities {
	c := tool.Capabilities{
		FS:     tool.FSAccess{Read: pick(r, FSPaths), Write: pick(r, FSPaths)},
		Memory: Levels[r.IntN(len(Levels))],
		LSP:    pick(r, LSPLanguages),
		Net:    pick(r, NetHosts),
		Env:    pick(r, EnvKeys),
		Client: pick(r, tool.ClientFeatures),
	}
	if r.IntN(2) == 0 {
		c.MemoryTopics = pick(r, Topics)
	}
	return c
}

// Narrow returns capabilities that c covers by construction: a subset of
// each list, a level no higher, and topics only where c has them.
func Narrow(r *rand.Rand, c tool.Capabilities) tool.Capabilities {
	sub := func(s []string) []string { return pick(r, s) }
	n := tool.Capabilities{FS: tool.FSAccess{Read: sub(c.FS.Read), Write: sub(c.FS.Write)}, LSP: sub(c.LSP), Net: sub(c.Net),
		Env: sub(c.Env), Client: sub(c.Client), Memory: Levels[r.IntN(slices.Index(Levels, c.Memory)+1)]}
	if len(c.MemoryTopics) > 0 {
		n.MemoryTopics = sub(c.MemoryTopics)
		if len(n.MemoryTopics) == 0 {
			n.Memory = tool.MemoryNone // no topics would be the whole store
		}
	} else if r.IntN(2) == 0 {
		n.MemoryTopics = pick(r, Topics)
	}
	return n
}
