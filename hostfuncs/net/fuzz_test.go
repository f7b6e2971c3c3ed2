package net

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// FuzzGrantMatch checks the host matcher: grants round-trip through their
// canonical form, and a match never lets a URL through on a scheme, port
// or host the grant does not name.
func FuzzGrantMatch(f *testing.F) {
	for _, seed := range [][2]string{
		{"api.github.com", "https://api.github.com/x"},
		{"*.example.com", "https://a.b.example.com/"},
		{"*.example.com", "https://example.com.evil.org/"},
		{"http://127.0.0.1:8080", "http://[::ffff:127.0.0.1]:8080/"},
		{"http://[::1]:8080", "http://[::1]:8080/"},
		{"*", "https://10.0.0.1/"},
		{"db.internal private", "https://DB.internal./"},
		{"localhost:3000", "https://localhost:3000"},
		{"example.com", "https://user@example.com/"},
		{"example.com:443", "https://example.com:0443/"},
		{"http://*:80", "http://127.1/"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, entry, raw string) {
		g, err := parseGrant(entry)
		if err != nil {
			return
		}
		again, err := parseGrant(g.String())
		if err != nil || again != g {
			t.Fatalf("%q -> %q -> %+v, %v; want %+v", entry, g.String(), again, err, g)
		}
		if g.private && (g.anyHost || g.wildcard) {
			t.Fatalf("%q: private wildcard", entry)
		}
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		target, err := parseTarget(u)
		if err != nil || !g.matches(target) {
			return
		}
		if target.scheme != g.scheme || strings.ToLower(u.Scheme) != g.scheme {
			t.Fatalf("%q matched %q on another scheme", entry, raw)
		}
		if target.port != orDefault(g.port, defaultPort(g.scheme)) {
			t.Fatalf("%q matched %q on port %d", entry, raw, target.port)
		}
		if u.User != nil {
			t.Fatalf("%q matched %q with user information", entry, raw)
		}
		host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		switch {
		case g.anyHost:
		case g.addr.IsValid():
			addr, err := netip.ParseAddr(host)
			if err != nil || addr.Unmap() != g.addr {
				t.Fatalf("%q matched %q: host %q is not %s", entry, raw, host, g.addr)
			}
		case g.wildcard:
			if !strings.HasSuffix(host, "."+g.host) || !validName(host) {
				t.Fatalf("%q matched %q: host %q", entry, raw, host)
			}
		default:
			if host != g.host {
				t.Fatalf("%q matched %q: host %q", entry, raw, host)
			}
		}
	})
}

// FuzzPublic checks that the SSRF guard judges an IPv4 address the same in
// every IPv6 form that reaches it.
func FuzzPublic(f *testing.F) {
	for _, seed := range []string{"127.0.0.1", "10.0.0.1", "8.8.8.8", "169.254.169.254", "0.0.0.0", "100.64.0.1"} {
		a := netip.MustParseAddr(seed).As4()
		f.Add(a[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 4 {
			return
		}
		v4 := netip.AddrFrom4([4]byte(b[:4]))
		mapped := netip.AddrFrom16(netip.AddrFrom4([4]byte(b[:4])).As16())
		var nat64, sixToFour [16]byte
		copy(nat64[:], []byte{0, 0x64, 0xff, 0x9b})
		copy(nat64[12:], b[:4])
		copy(sixToFour[:], []byte{0x20, 0x02})
		copy(sixToFour[2:], b[:4])
		want := public(v4)
		for _, form := range []netip.Addr{mapped, netip.AddrFrom16(nat64), netip.AddrFrom16(sixToFour)} {
			if public(form) != want {
				t.Fatalf("public(%s) = %v but public(%s) = %v", v4, want, form, !want)
			}
		}
		if want && (v4.IsLoopback() || v4.IsPrivate() || v4.IsLinkLocalUnicast() || v4.IsMulticast() || v4.IsUnspecified()) {
			t.Fatalf("%s judged public", v4)
		}
	})
}

// FuzzDecode checks the request parser: it never panics, and what it
// accepts has a fetchable URL, a known method and safe headers.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"op":"request","url":"https://api.example.com/x?y=z"}`,
		`{"op":"request","method":"POST","url":"http://127.0.0.1:8080/","headers":{"X-A":"b"},"body":"hi","timeoutMs":5}`,
		`{"op":"request","url":"https://[::1]/","bodyBase64":"aGk="}`,
		`{"op":"request","url":"https://u@x/"}`, `{"op":"request","url":"https://x/","headers":{"Host":"y"}}`,
	} {
		f.Add([]byte(seed))
	}
	methods := "GET HEAD POST PUT PATCH DELETE OPTIONS"
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := decode(raw)
		if err != nil {
			return
		}
		if !strings.Contains(methods, req.Method) || strings.Contains(req.Method, " ") || req.Method == "" {
			t.Fatalf("accepted method %q", req.Method)
		}
		target, err := parseTarget(req.url)
		if err != nil || target != req.target || req.url.User != nil {
			t.Fatalf("accepted URL %q: %v", req.URL, err)
		}
		for k, v := range req.Headers {
			if checkHeader(k, v) != nil || strings.ContainsAny(k+v, "\r\n") {
				t.Fatalf("accepted header %q: %q", k, v)
			}
		}
		if req.TimeoutMs < 0 {
			t.Fatalf("accepted timeoutMs %d", req.TimeoutMs)
		}
	})
}
