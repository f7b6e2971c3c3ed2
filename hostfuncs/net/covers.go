package net

import "strings"

// Covers reports whether the net entry grant allows everything the entry
// request allows: every URL request matches, grant matches, and every
// address request may connect to, grant may connect to as well. It is the
// net half of "does grant set A cover request B" (internal/capset), which
// install review, update diffs and permission prompts share.
//
// A wildcard ("*", "*.example.com") never covers an internal host, because
// it never reaches one: the SSRF guard refuses every non-public address to
// a wildcard grant at dial time. Internal hosts (see Internal) are IP
// literals that are not public (loopback, RFC 1918 private, IPv6
// unique-local, link-local, unspecified, and the rest of the guard's list),
// "localhost" and names under ".localhost". Only an entry naming the same
// host, scheme and port covers one; likewise a name marked "private" is
// covered only by the same name marked "private".
//
// An entry that does not parse allows nothing at run time; as a request it
// is covered only by the identical entry, so that a review still shows it.
func Covers(grant, request string) bool {
	r, err := parseGrant(request)
	if err != nil {
		return strings.TrimSpace(grant) == strings.TrimSpace(request)
	}
	g, err := parseGrant(grant)
	return err == nil && g.covers(r)
}

// Internal reports whether entry names an internal host (see Covers): one
// that "*" never covers, and that a person must grant by name.
func Internal(entry string) bool {
	g, err := parseGrant(entry)
	return err == nil && g.internal()
}

func (g *grant) covers(r grant) bool {
	if g.scheme != r.scheme || orDefault(g.port, defaultPort(g.scheme)) != orDefault(r.port, defaultPort(r.scheme)) {
		return false
	}
	if g.sameHost(r) {
		return g.private || !r.private
	}
	if r.internal() || r.private && !r.addr.IsValid() {
		return false // only the same host covers an internal host or a private name
	}
	switch {
	case g.anyHost:
		return true
	case g.wildcard:
		// A name, or a narrower wildcard, under g's suffix; never an IP
		// literal, which names never match.
		return !r.anyHost && !r.addr.IsValid() && strings.HasSuffix(r.host, "."+g.host)
	}
	return false
}

// sameHost reports whether g and r name the same host: the same address,
// name or wildcard.
func (g *grant) sameHost(r grant) bool {
	if g.addr.IsValid() || r.addr.IsValid() {
		return g.addr == r.addr
	}
	return g.anyHost == r.anyHost && g.wildcard == r.wildcard && g.host == r.host
}

// internal reports whether g names a host the SSRF guard treats as not
// public by itself: a non-public IP literal, "localhost", or a name (or
// wildcard suffix) under ".localhost", which resolvers answer with loopback
// (RFC 6761).
func (g *grant) internal() bool {
	if g.addr.IsValid() {
		return !public(g.addr)
	}
	return !g.anyHost && (g.host == "localhost" || strings.HasSuffix(g.host, ".localhost"))
}
