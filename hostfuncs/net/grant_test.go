package net

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestParseGrant(t *testing.T) {
	for _, tc := range []struct {
		entry, want string // want "" means invalid
	}{
		{"api.github.com", "https://api.github.com"},
		{"API.GitHub.com.", "https://api.github.com"},
		{"https://api.github.com/", "https://api.github.com"},
		{"http://example.com:8080", "http://example.com:8080"},
		{"*.example.com", "https://*.example.com"},
		{"*", "https://*"},
		{"http://*:8080", "http://*:8080"},
		{"127.0.0.1:8080", "https://127.0.0.1:8080"},
		{"http://[::1]:8080", "http://[::1]:8080"},
		{"[::ffff:10.0.0.1]", "https://10.0.0.1"},
		{"localhost:3000", "https://localhost:3000"},
		{"db.internal private", "https://db.internal private"},
		{"  http://db.internal:5432   private ", "http://db.internal:5432 private"},
		{"", ""},
		{"ftp://example.com", ""},
		{"example.com/path", ""},
		{"example.com?x", ""},
		{"user@example.com", ""},
		{"example.com:0", ""},
		{"example.com:65536", ""},
		{"example.com:080", ""},
		{"example.com:", ""},
		{"example.com:*", ""},
		{"::1", ""},
		{"[::1", ""},
		{"[10.0.0.1]", ""},
		{"[fe80::1%eth0]", ""},
		{"exa mple.com", ""},
		{"api-*.example.com", ""},
		{"*.*.example.com", ""},
		{"*example.com", ""},
		{"ex\\ample.com", ""},
		{"bücher.de", ""},
		{"example..com", ""},
		{"example.com sometimes", ""},
		{"* private", ""},
		{"*.example.com private", ""},
		{"10.0.0.1 private", ""},
		{strings.Repeat("a", 64) + ".com", ""},
	} {
		g, err := parseGrant(tc.entry)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("parseGrant(%q) = %s, want an error", tc.entry, g.String())
		case tc.want != "" && err != nil:
			t.Errorf("parseGrant(%q): %v", tc.entry, err)
		case tc.want != "" && g.String() != tc.want:
			t.Errorf("parseGrant(%q) = %s, want %s", tc.entry, g.String(), tc.want)
		}
	}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		entry, url string
		want       bool
	}{
		{"api.github.com", "https://api.github.com/repos", true},
		{"api.github.com", "https://API.GITHUB.COM./x", true},
		{"api.github.com", "https://api.github.com:443/", true},
		{"api.github.com", "http://api.github.com/", false},       // https only by default
		{"api.github.com", "https://api.github.com:8443/", false}, // default port only
		{"api.github.com", "https://github.com/", false},
		{"api.github.com", "https://evil-api.github.com/", false},
		{"api.github.com", "https://api.github.com.evil.com/", false},
		{"http://example.com", "http://example.com/", true},
		{"http://example.com", "https://example.com/", false},
		{"http://example.com", "http://example.com:443/", false},
		{"example.com:8443", "https://example.com:8443/", true},
		{"example.com:8443", "https://example.com/", false},
		{"*.example.com", "https://a.example.com/", true},
		{"*.example.com", "https://a.b.example.com/", true},
		{"*.example.com", "https://example.com/", false},
		{"*.example.com", "https://badexample.com/", false},
		{"*.example.com", "https://example.com.evil.org/", false},
		{"*", "https://anything.org/", true},
		{"*", "https://10.0.0.1/", true}, // the dial guard refuses it later
		{"*", "http://anything.org/", false},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/", true},
		{"http://127.0.0.1:8080", "http://[::ffff:127.0.0.1]:8080/", true},
		{"http://127.0.0.1:8080", "http://127.0.0.2:8080/", false},
		{"http://127.0.0.1:8080", "http://localhost:8080/", false},
		{"http://[::1]:8080", "http://[0:0::1]:8080/", true},
		{"*.example.com", "https://10.0.0.1/", false},
		{"localhost", "https://localhost/", true},
	} {
		g, err := parseGrant(tc.entry)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		target, err := parseTarget(u)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if got := g.matches(target); got != tc.want {
			t.Errorf("%q matches %q = %v, want %v", tc.entry, tc.url, got, tc.want)
		}
	}
}

func TestParseTargetRefuses(t *testing.T) {
	for _, raw := range []string{
		"ftp://example.com/", "file:///etc/passwd", "https://user:pw@example.com/", "https:///x",
		"mailto:x@example.com", "https://bücher.de/", "https://[fe80::1%25eth0]/", "https://example.com:0/",
		"//example.com/", "/relative",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		if _, err := parseTarget(u); err == nil {
			t.Errorf("parseTarget(%q) accepted it", raw)
		}
	}
}

func TestPublic(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},  // 6to4 of 8.8.8.8
		{"::ffff:8.8.8.8", true},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"10.0.0.1", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"255.255.255.255", false},
		{"198.18.0.1", false},
		{"::", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::127.0.0.1", false},    // IPv4-compatible
		{"64:ff9b::a00:1", false}, // NAT64 of 10.0.0.1
		{"64:ff9b::7f00:1", false},
		{"2002:a00:1::1", false},       // 6to4 of 10.0.0.1
		{"2002:7f00:1::1", false},      // 6to4 of 127.0.0.1
		{"2001:0:4136:e378::1", false}, // Teredo
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"fec0::1", false},
		{"ff02::1", false},
		{"2001:db8::1", false},
	} {
		addr := netip.MustParseAddr(tc.addr)
		if got := public(addr); got != tc.want {
			t.Errorf("public(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if public(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
	if public(netip.MustParseAddr("fe80::1%eth0")) {
		t.Error("a zoned address is public")
	}
}

// TestGrantShowsNoCredential: a net grant entry with a user:password@ is
// refused, whatever else is wrong with it, and the error shows it without
// the credential (download.ShowHost): it reaches stderr and the logs.
func TestGrantShowsNoCredential(t *testing.T) {
	const secret = "S3cretTok"
	for entry, shown := range map[string]string{
		"https://u:" + secret + "@api.example.com": `"https://api.example.com"`,
		"ftp://" + secret + "@api.example.com":     `"ftp://api.example.com"`,
		"u:" + secret + "@api.example.com private": `"(an unparsable URL, not shown as it may carry credentials)"`,
		secret + "@api.example.com":                `"api.example.com"`,
	} {
		err := ValidateGrant(entry)
		want := "net grant " + shown + " (shown without what precedes the @): only [scheme://]host[:port] is allowed, no user or password"
		if err == nil || err.Error() != want {
			t.Errorf("ValidateGrant(%q) = %v, want %s", entry, err, want)
		}
	}
}

// TestNumericHostSpellings: a host that C resolvers and browsers read as an
// IPv4 address (127.1, 2130706433, 0x7f.0.0.1, 0177.0.0.1) was a DNS name
// here, so "*" covered it in a prompt while a cgo resolver reached
// loopback. Such a host is refused, in a URL and in a grant, and the
// refusal names the dotted-decimal spelling that is accepted.
func TestNumericHostSpellings(t *testing.T) {
	for host, want := range map[string]string{
		"127.1":            "is the IPv4 address 127.0.0.1 in another spelling; write it as 127.0.0.1",
		"2130706433":       "is the IPv4 address 127.0.0.1",
		"0x7f.0.0.1":       "is the IPv4 address 127.0.0.1",
		"0X7F.1":           "is the IPv4 address 127.0.0.1",
		"0177.0.0.1":       "is the IPv4 address 127.0.0.1",
		"127.0.0.1.":       "", // the trailing dot is dropped: plain 127.0.0.1
		"10.0.0.07":        "is the IPv4 address 10.0.0.7",
		"169.254.43518":    "is the IPv4 address 169.254.169.254",
		"0xa9fea9fe":       "is the IPv4 address 169.254.169.254",
		"example.123":      "ends in a number but is not an IPv4 address",
		"1.2.3.4.5":        "ends in a number but is not an IPv4 address",
		"256.1":            "ends in a number but is not an IPv4 address",
		"4294967296":       "ends in a number but is not an IPv4 address",
		"0x":               "is the IPv4 address 0.0.0.0",
		"123.example.com":  "",
		"0x7f.example.com": "",
	} {
		t.Run(host, func(t *testing.T) {
			u, err := url.Parse("http://" + host + ":8080/")
			if err != nil {
				t.Fatal(err)
			}
			_, terr := parseTarget(u)
			_, gerr := parseGrant("http://" + host + ":8080")
			for what, err := range map[string]error{"URL": terr, "grant": gerr} {
				switch {
				case want == "" && err != nil:
					t.Errorf("%s refused: %v", what, err)
				case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
					t.Errorf("%s: error %v, want %q", what, err, want)
				}
			}
			if want != "" && (Covers("http://*:8080", "http://"+host+":8080") || Internal("http://"+host+":8080")) {
				t.Errorf(`"*" covers %s, or it is called internal though it is refused`, host)
			}
		})
	}
	if _, err := parseGrant("*.0.1"); err == nil {
		t.Error("a wildcard under a numeric suffix is accepted")
	}
}

// FuzzIPv4Spellings: every loose IPv4 spelling either is refused or is the
// dotted-decimal address itself; none is ever matched as a DNS name.
func FuzzIPv4Spellings(f *testing.F) {
	for _, s := range []string{"127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1", "1.2.3.4", "a.b", "0x", "1."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		u, err := url.Parse("https://" + host + "/")
		if err != nil {
			return
		}
		tg, err := parseTarget(u)
		if err != nil {
			return
		}
		labels := strings.Split(tg.host, ".")
		if addr, ok := parseIPv4Loose(labels); ok && numericLabel(labels[len(labels)-1]) && tg.addr != addr {
			t.Fatalf("%q reads as %s but is matched as %q (%v)", host, addr, tg.host, tg.addr)
		}
	})
}

// TestGrantNeverReachesAnotherHost: every spelling of a URL either is
// refused or is matched on the host net/http will connect to. A grant for
// api.example.com allows its spellings (case, trailing dot, default port)
// and nothing whose connection goes elsewhere: user information, a
// backslash, an escape, a fragment or query holding the granted name, an
// IDN full stop that IDNA would map, a longer name.
func TestGrantNeverReachesAnotherHost(t *testing.T) {
	g, err := parseGrant("api.example.com")
	if err != nil {
		t.Fatal(err)
	}
	for raw, want := range map[string]bool{
		"https://api.example.com/x":              true,
		"https://API.Example.COM./x":             true,
		"https://api.example.com:443/x":          true,
		"https://api.example.com:0443/x":         true,
		"HTTPS://api.example.com/":               true,
		"https://api.example.com@evil.com/":      false,
		"https://evil.com@api.example.com/":      false, // user information is refused outright
		"https://api.example.com\\@evil.com/":    false,
		"https://api.example.com%2eevil.com/":    false,
		"https://api%2eexample.com/":             false,
		"https://evil.com#@api.example.com":      false,
		"https://evil.com?@api.example.com":      false,
		"https://evil.com/api.example.com":       false,
		"https://api.example.com.evil.com/":      false,
		"https://api\u3002example\u3002com/":     false,
		"https://api.example.com:8443/":          false,
		"http://api.example.com/":                false,
		"https://api.example.com..//":            false,
		"https://[::ffff:api.example.com]/":      false,
		"https://api.example.com%00.evil.com/":   false,
		"https://api.example.com\t.evil.com/":    false,
		"https:api.example.com":                  false,
		"https:/api.example.com/":                false,
		"//api.example.com/":                     false,
		"https://api.example.com:443@evil.com/":  false,
		"https://api.example.com:@evil.com:443/": false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			if want {
				t.Errorf("%q: %v", raw, err)
			}
			continue
		}
		tg, err := parseTarget(u)
		got := err == nil && g.matches(tg)
		if got != want {
			t.Errorf("%q allowed = %v, want %v (%v)", raw, got, want, err)
		}
		// What the transport connects to: the URL's host, lower-cased by
		// the dial guard (normalizeHost), and nothing else.
		if got && normalizeHost(u.Hostname()) != "api.example.com" {
			t.Errorf("%q allowed but connects to %q", raw, u.Hostname())
		}
	}
}

// FuzzURLSpellings: spellings of one URL that reach the same host, port
// and scheme (another case, a trailing dot, the default port written out,
// an IPv4 address as IPv4-mapped IPv6) get the same decision from a grant.
func FuzzURLSpellings(f *testing.F) {
	for _, s := range [][2]string{{"api.example.com", "https://api.example.com/x"}, {"*.example.com", "https://A.example.com./"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/"}, {"localhost:3000", "https://localhost:3000/"}, {"*", "https://10.0.0.7/"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, entry, raw string) {
		g, err := parseGrant(entry)
		if err != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		tg, err := parseTarget(u)
		if err != nil {
			return
		}
		want := g.matches(tg)
		var hosts []string
		if tg.addr.Is4() {
			hosts = append(hosts, "[::ffff:"+tg.addr.String()+"]")
		} else if !tg.addr.IsValid() {
			hosts = append(hosts, strings.ToUpper(tg.host), tg.host+".", strings.ToUpper(tg.host)+".")
		}
		ports := []string{":" + strconv.Itoa(int(tg.port))}
		for _, h := range hosts {
			for _, p := range ports {
				v := *u
				v.Host = h + p
				vt, err := parseTarget(&v)
				if err != nil {
					t.Fatalf("%q is refused but its spelling %q is not: %v", v.String(), raw, err)
				}
				if g.matches(vt) != want {
					t.Fatalf("grant %q decides %q and %q apart", entry, raw, v.String())
				}
				if checkAddr("t", []grant{g}, vt.host, vt.port, netip.MustParseAddr("127.0.0.1")) == nil !=
					(checkAddr("t", []grant{g}, tg.host, tg.port, netip.MustParseAddr("127.0.0.1")) == nil) {
					t.Fatalf("grant %q: the dial guard decides %q and %q apart", entry, raw, v.String())
				}
			}
		}
	})
}
