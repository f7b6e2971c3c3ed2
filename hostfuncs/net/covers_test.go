package net

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestCovers(t *testing.T) {
	for _, c := range []struct {
		grant, request string
		want           bool
	}{
		{"api.github.com", "api.github.com", true},
		{"API.github.com.", "https://api.github.com:443", true},
		{"*", "api.github.com", true},
		{"*", "*.github.com", true},
		{"*", "8.8.8.8", true},
		{"*", "[2001:4860:4860::8888]", true},
		{"*.github.com", "api.github.com", true},
		{"*.github.com", "*.api.github.com", true},
		{"*.github.com", "github.com", false},
		{"*.github.com", "*", false},
		{"*", "http://api.github.com", false},
		{"*", "api.github.com:8443", false},
		{"api.github.com private", "api.github.com", true},
		{"api.github.com", "api.github.com private", false},
		{"*", "registry.internal private", false},

		// "*" never covers an internal host, in any spelling.
		{"*", "127.0.0.1", false},
		{"*", "https://127.0.0.1", false},
		{"*", "10.0.0.7", false},
		{"*", "172.16.1.1", false},
		{"*", "192.168.1.1", false},
		{"*", "169.254.169.254", false},
		{"*", "0.0.0.0", false},
		{"*", "[::1]", false},
		{"*", "[::]", false},
		{"*", "[fc00::1]", false},
		{"*", "[fd12:3456::1]", false},
		{"*", "[fe80::1]", false},
		{"*", "[::ffff:127.0.0.1]", false},
		{"*", "[::ffff:10.0.0.7]", false},
		{"*", "localhost", false},
		{"*", "LOCALHOST.", false},
		{"*", "api.localhost", false},
		{"*", "*.localhost", false},
		{"http://*:8080", "http://127.0.0.1:8080", false},
		{"*.localhost", "api.localhost", false},

		// An internal host is covered by the same host only.
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.1", "[::ffff:127.0.0.1]", true},
		{"[::1]", "[0:0::1]", true},
		{"127.0.0.1", "127.0.0.2", false},
		{"127.0.0.1", "localhost", false},
		{"localhost", "127.0.0.1", false},
		{"localhost:3000", "localhost:3000", true},
		{"localhost", "localhost:3000", false},
		{"http://10.0.0.7", "https://10.0.0.7", false},

		// Entries that do not parse: only the identical entry.
		{"a b", "a b", true},
		{"*", "a b", false},
		{"a b", "api.github.com", false},
	} {
		if got := Covers(c.grant, c.request); got != c.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", c.grant, c.request, got, c.want)
		}
	}
}

// coverEntries are net entries built from hosts of every kind, for the
// property tests.
func coverEntries() []string {
	hosts := []string{"*", "*.example.com", "*.b.example.com", "*.localhost", "example.com", "a.b.example.com",
		"registry.internal", "registry.internal private", "localhost", "api.localhost",
		"127.0.0.1", "10.0.0.7", "8.8.8.8", "169.254.169.254", "0.0.0.0", "[::1]", "[fc00::1]", "[fe80::1]", "[2001:4860::8888]"}
	var out []string
	for _, h := range hosts {
		name, opt, _ := strings.Cut(h, " ")
		if opt != "" {
			opt = " " + opt
		}
		for _, prefix := range []string{"", "http://"} {
			for _, port := range []string{"", ":8080"} {
				out = append(out, prefix+name+port+opt)
			}
		}
	}
	return out
}

// TestCoversIsSound checks Covers against the capability itself: when grant
// covers request, every URL and resolved address that request lets a tool
// reach, the matcher and the dial-time SSRF guard let grant reach too. It
// also checks that Covers is reflexive and transitive, and that no wildcard
// covers an internal host.
func TestCoversIsSound(t *testing.T) {
	entries := coverEntries()
	type reach struct {
		target target
		addr   netip.Addr
	}
	var reaches []reach
	resolved := []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.0.0.7")}
	for _, scheme := range []string{"https", "http"} {
		for _, port := range []string{"", ":8080"} {
			for _, host := range []string{"example.com", "a.b.example.com", "c.a.b.example.com", "registry.internal", "localhost",
				"api.localhost", "127.0.0.1", "10.0.0.7", "8.8.8.8", "169.254.169.254", "0.0.0.0", "[::1]", "[fc00::1]",
				"[fe80::1]", "[2001:4860::8888]", "[::ffff:127.0.0.1]"} {
				u, _ := url.Parse(scheme + "://" + host + port + "/")
				tg, err := parseTarget(u)
				if err != nil {
					t.Fatal(err)
				}
				addrs := resolved
				if tg.addr.IsValid() {
					addrs = []netip.Addr{tg.addr}
				}
				for _, a := range addrs {
					reaches = append(reaches, reach{tg, a})
				}
			}
		}
	}
	reachable := func(entry string, r reach) bool {
		g, err := parseGrant(entry)
		if err != nil {
			return false
		}
		grants := []grant{g}
		return allowed(grants, r.target) && checkAddr("t", grants, r.target.host, r.target.port, r.addr) == nil
	}
	for _, g := range entries {
		if !Covers(g, g) {
			t.Errorf("Covers(%q, itself) = false", g)
		}
		for _, r := range entries {
			if !Covers(g, r) {
				continue
			}
			for _, x := range reaches {
				if reachable(r, x) && !reachable(g, x) {
					t.Errorf("Covers(%q, %q), but %q reaches %s://%s:%d at %s and %q does not",
						g, r, r, x.target.scheme, x.target.host, x.target.port, x.addr, g)
				}
			}
			pg, _ := parseGrant(g)
			pr, _ := parseGrant(r)
			if (pg.anyHost || pg.wildcard) && !pg.sameHost(pr) && Internal(r) {
				t.Errorf("wildcard %q covers internal %q", g, r)
			}
			for _, s := range entries {
				if Covers(r, s) && !Covers(g, s) {
					t.Errorf("not transitive: %q covers %q covers %q", g, r, s)
				}
			}
		}
	}
}

// FuzzCovers checks Covers on arbitrary entries: reflexive, consistent with
// the canonical form, and never letting a wildcard cover an internal host.
func FuzzCovers(f *testing.F) {
	for _, seed := range [][2]string{
		{"*", "127.0.0.1"}, {"*", "[::ffff:10.0.0.7]"}, {"*", "LocalHost."}, {"*.localhost", "a.localhost"},
		{"*.example.com", "*.a.example.com"}, {"127.0.0.1", "[::ffff:127.0.0.1]"}, {"x.org private", "x.org"},
		{"http://*:80", "http://127.1"}, {"a b", "a b"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, grant, request string) {
		covers := Covers(grant, request)
		if !Covers(request, request) {
			t.Fatalf("Covers(%q, itself) = false", request)
		}
		g, gerr := parseGrant(grant)
		r, rerr := parseGrant(request)
		if gerr != nil || rerr != nil {
			return
		}
		if canon := Covers(g.String(), r.String()); canon != covers {
			t.Fatalf("Covers(%q, %q) = %v but on the canonical forms %q, %q = %v", grant, request, covers, g.String(), r.String(), canon)
		}
		if covers && (g.anyHost || g.wildcard) && !g.sameHost(r) && r.internal() {
			t.Fatalf("wildcard %q covers internal %q", grant, request)
		}
		if covers && r.addr.IsValid() && !public(r.addr) && g.addr != r.addr {
			t.Fatalf("%q covers the non-public address %q", grant, request)
		}
	})
}

// FuzzTargetEntry checks the grant a denial names (tool.Need, which a
// permission prompt offers and "allow always" writes): for every URL the
// capability accepts, it is an entry config accepts, it allows that URL,
// and it is internal exactly when the URL's host is.
func FuzzTargetEntry(f *testing.F) {
	for _, seed := range []string{"https://[::ffff:10.0.0.7]/", "http://[0:0::1]:8080/x", "https://API.example.com./",
		"https://127.0.0.1:443/", "http://localhost:3000", "https://8.8.8.8/", "https://a.localhost/"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		tg, err := parseTarget(u)
		if err != nil {
			return
		}
		entry := targetEntry(tg)
		g, err := parseGrant(entry)
		if err != nil {
			t.Fatalf("%q: the denial names %q, which is not a grant: %v", raw, entry, err)
		}
		if !g.matches(tg) {
			t.Fatalf("%q: the denial names %q, which does not allow it", raw, entry)
		}
		internal := tg.addr.IsValid() && !public(tg.addr) || tg.host == "localhost" || strings.HasSuffix(tg.host, ".localhost")
		if Internal(entry) != internal {
			t.Fatalf("%q: Internal(%q) = %v", raw, entry, !internal)
		}
	})
}
