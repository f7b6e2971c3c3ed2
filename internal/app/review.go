package app

import (
	"path"
	"slices"
	"strings"

	"github.com/warden-run/warden/tool"
)

// Missing returns what requested asks for that granted does not cover: the
// gaps a reviewer should look at. It is a display aid and errs on the side
// of showing a gap: a net request counts as covered only by the same entry
// or by a wildcard ("*", "*.example.com") with the same scheme and port.
func Missing(requested, granted tool.Capabilities) tool.Capabilities {
	var m tool.Capabilities
	m.FS.Read = notCovered(requested.FS.Read, granted.FS.Read, fsCovers)
	m.FS.Write = notCovered(requested.FS.Write, granted.FS.Write, fsCovers)
	switch {
	case requested.Memory == tool.MemoryReadWrite && granted.Memory != tool.MemoryReadWrite:
		m.Memory = tool.MemoryReadWrite
	case requested.Memory == tool.MemoryRead && granted.Memory == tool.MemoryNone:
		m.Memory = tool.MemoryRead
	}
	// No topic list in a grant means every topic.
	if len(granted.MemoryTopics) > 0 {
		m.MemoryTopics = notCovered(requested.MemoryTopics, granted.MemoryTopics, topicCovers)
	}
	m.LSP = notCovered(requested.LSP, granted.LSP, strings.EqualFold)
	m.Net = notCovered(requested.Net, granted.Net, netCovers)
	m.Env = notCovered(requested.Env, granted.Env, strings.EqualFold)
	m.Client = notCovered(requested.Client, granted.Client, strings.EqualFold)
	return m
}

func notCovered(requested, granted []string, covers func(grant, request string) bool) []string {
	var out []string
	for _, r := range requested {
		if !slices.ContainsFunc(granted, func(g string) bool { return covers(g, r) }) {
			out = append(out, r)
		}
	}
	return out
}

// fsCovers mirrors the fs capability's lexical grant check: same root, and
// the grant is the path or one of its parents.
func fsCovers(grant, request string) bool {
	gRoot, g := splitRoot(grant)
	rRoot, r := splitRoot(request)
	return gRoot == rRoot && (g == "." || g == r || strings.HasPrefix(r, strings.TrimSuffix(g, "/")+"/"))
}

// splitRoot parses a grant path as the fs capability does: "notes:x" is in
// the root "notes", "project:x", "./a:b" and "x" in the project root.
func splitRoot(p string) (root, rel string) {
	if name, rest, ok := strings.Cut(p, ":"); ok && len(name) > 1 && !strings.ContainsAny(name, "/.") {
		root, p = name, rest
	}
	if root == "project" {
		root = ""
	}
	if p == "" {
		return root, "."
	}
	return root, path.Clean(p)
}

func topicCovers(grant, request string) bool {
	return grant == request || strings.HasPrefix(request, grant+"/")
}

// netCovers: the same entry, or a wildcard host with the same scheme, port
// and private flag.
func netCovers(grant, request string) bool {
	g, r := parseNetEntry(grant), parseNetEntry(request)
	if g.scheme != r.scheme || g.port != r.port || g.private != r.private {
		return false
	}
	switch {
	case g.host == r.host:
		return true
	case g.host == "*":
		return !r.private
	case strings.HasPrefix(g.host, "*."):
		return strings.HasSuffix(r.host, g.host[1:]) && !strings.HasPrefix(r.host, "*")
	}
	return false
}

type netEntry struct {
	scheme, host, port string
	private            bool
}

func parseNetEntry(s string) netEntry {
	var e netEntry
	s = strings.ToLower(strings.TrimSpace(s))
	if rest, ok := strings.CutSuffix(s, " private"); ok {
		s, e.private = strings.TrimSpace(rest), true
	}
	e.scheme = "https"
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		e.scheme, s = scheme, rest
	}
	e.host = s
	if i := strings.LastIndexByte(s, ':'); i >= 0 && !strings.HasSuffix(s, "]") {
		e.host, e.port = s[:i], s[i+1:]
	}
	if e.port == "" {
		e.port = map[string]string{"https": "443", "http": "80"}[e.scheme]
	}
	return e
}
