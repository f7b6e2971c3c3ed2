package download

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/sigverify"
)

func TestCanonicalURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.com/r/tool.wasm":                    "https://example.com/r/tool.wasm",
		"HTTPS://EXAMPLE.COM/r/Tool.wasm":                    "https://example.com/r/Tool.wasm",
		"https://example.com.:443/r/tool.wasm":               "https://example.com/r/tool.wasm",
		"https://example.com:0443/r/tool.wasm":               "https://example.com/r/tool.wasm",
		"https://example.com:8443/r/tool.wasm":               "https://example.com:8443/r/tool.wasm",
		"http://127.0.0.1:80/x.wasm":                         "http://127.0.0.1/x.wasm",
		"http://LOCALHOST:8080/x.wasm":                       "http://localhost:8080/x.wasm",
		"http://[0:0::1]:8080/x.wasm":                        "http://[::1]:8080/x.wasm",
		"https://example.com":                                "https://example.com/",
		"https://example.com/trusted/../evil/tool.wasm":      "https://example.com/evil/tool.wasm",
		"https://example.com/trusted/%2E%2E/evil/tool.wasm":  "https://example.com/evil/tool.wasm",
		"https://example.com/trusted/%2e./evil/tool.wasm":    "https://example.com/evil/tool.wasm",
		"https://example.com/a/./b/../../../c":               "https://example.com/c",
		"https://example.com/a/b/..":                         "https://example.com/a/",
		"https://example.com/a/.":                            "https://example.com/a/",
		"https://example.com/%7euser/%41%62c.wasm":           "https://example.com/~user/Abc.wasm",
		"https://example.com/a%3ab/x%20y.wasm":               "https://example.com/a%3Ab/x%20y.wasm",
		"https://example.com/a b/x\u00e9.wasm":               "https://example.com/a%20b/x%C3%A9.wasm",
		"https://example.com/x.wasm?v=%7e1&a=%2f":            "https://example.com/x.wasm?v=~1&a=%2F",
		"https://example.com/x.wasm?":                        "https://example.com/x.wasm",
		"https://example.com/a/..%3Bx/y":                     "https://example.com/a/..%3Bx/y",
		"https://example.com/releases/v1/tool.wasm:latest":   "https://example.com/releases/v1/tool.wasm:latest",
		"https://objects.example.com/a_b/1.2.3/tool-x.wasm":  "https://objects.example.com/a_b/1.2.3/tool-x.wasm",
		"https://xn--exmple-cua.com/tool.wasm":               "https://xn--exmple-cua.com/tool.wasm",
		"https://example.com/r/%E2%80%AE.wasm":               "https://example.com/r/%E2%80%AE.wasm",
		"https://example.com/trusted/%2E%2E%2E/tool.wasm":    "https://example.com/trusted/.../tool.wasm",
		"https://example.com/trusted//../tool.wasm":          "https://example.com/trusted/tool.wasm",
		"https://example.com/../../trusted/tool.wasm":        "https://example.com/trusted/tool.wasm",
		"https://example.com/trusted/x/%2e%2E/%2E/tool.wasm": "https://example.com/trusted/tool.wasm",
	} {
		got, err := CanonicalURL(in)
		if err != nil || got != want {
			t.Errorf("CanonicalURL(%q) = %q, %v; want %q", in, got, err, want)
			continue
		}
		if again, err := CanonicalURL(got); err != nil || again != got {
			t.Errorf("CanonicalURL(%q) = %q, %v: not a fixed point", got, again, err)
		}
	}
}

// TestCanonicalURLRefusals: each form a server may resolve to a path other
// than the one matched is refused, with the reason, and no error shows a
// credential.
func TestCanonicalURLRefusals(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:s3cretpw@example.com/x.wasm":      "carries credentials",
		"https://s3cretpw@example.com/x.wasm":           "carries credentials",
		"https://user:s3cr/etpw@example.com/x.wasm":     "may carry credentials",
		"https://user/s3cretpw@example.com/x.wasm":      "an @ outside the host part",
		"https://example.com/x.wasm?token=a@s3cretpw":   "an @ outside the host part",
		"https://example.com/x.wasm#frag":               "#fragment",
		"https://example.com/x.wasm#":                   "#fragment",
		"https://example.com/trusted/..%2F..%2Fevil/x":  "an encoded / (%2F)",
		"https://example.com/trusted/..%2f/evil/x":      "an encoded / (%2F)",
		"https://example.com/trusted/..%5C/evil/x":      "an encoded \\ (%5C)",
		"https://example.com/trusted/..\\evil/x":        "(%5C)",
		"https://example.com/trusted/%252E%252E/evil/x": "an encoded % (%25)",
		"https://example.com/trusted/x%00.wasm":         "NUL",
		"https://example.com/trusted/..;x/evil/x.wasm":  "dot segment with a parameter",
		"https://example.com/trusted/.;/x.wasm":         "dot segment with a parameter",
		"https://exämple.com/x.wasm":                    "not ASCII",
		"https://2130706433/x.wasm":                     "dotted-quad",
		"https://127.1/x.wasm":                          "dotted-quad",
		"https://0x7f.0.0.1/x.wasm":                     "dotted-quad",
		"https://a..b/x.wasm":                           "empty label",
		"https://[fe80::1%25eth0]/x.wasm":               "zone",
		"https://example.com:0/x.wasm":                  "port 0",
		"https://example.com:99999/x.wasm":              "port 99999",
		"http://example.com/x.wasm":                     "loopback",
		"http://localhost.example.com/x.wasm":           "loopback",
		"ftp://example.com/x.wasm":                      "scheme ftp",
		"https:///x.wasm":                               "no host",
	} {
		got, err := CanonicalURL(in)
		if err == nil {
			t.Errorf("CanonicalURL(%q) = %q, want a refusal", in, got)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CanonicalURL(%q): %v; want it to say %q", in, err, want)
		}
		if !errors.Is(err, ErrNotCanonical) && !errors.Is(err, ErrInsecure) {
			t.Errorf("CanonicalURL(%q): %v is neither ErrNotCanonical nor ErrInsecure", in, err)
		}
		for _, shown := range []string{err.Error(), ShowURL(in)} {
			if strings.Contains(shown, "s3cr") || strings.Contains(shown, "etpw") {
				t.Errorf("CanonicalURL(%q): %q shows the password", in, shown)
			}
		}
	}
}

// TestRedactText: a credential quoted by the HTTP client's errors (a
// Location header) is removed, slashes in the password included.
func TestRedactText(t *testing.T) {
	for in, want := range map[string]string{
		`failed to parse Location header "http://u:pw@h/%zz"`: `failed to parse Location header "http://[redacted]@h/%zz"`,
		`Get "http://u:p/w@127.0.0.1/x": EOF`:                 `Get "http://[redacted]@127.0.0.1/x": EOF`,
		`no at sign here http://h/x`:                          `no at sign here http://h/x`,
		`two: http://a:b@h/x and https://c:d@i/y`:             `two: http://[redacted]@h/x and https://[redacted]@i/y`,
	} {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%q) = %q, want %q", in, got, want)
		}
	}
	e := &safeError{errors.New(`failed to parse Location header "http://u:pa/ss@h/%zz": parse "http://u:pa/ss@h/%zz": invalid port ":pa" after host`)}
	if strings.Contains(e.Error(), "pa") {
		t.Errorf("a bad Location with credentials is shown: %s", e)
	}
}

// FuzzCanonicalURL: the canonical form is a fixed point that parses back
// to itself, carries no userinfo, fragment or dot segment, and a policy
// prefix its match key is under is a prefix of the path the server is
// asked for, segment by segment, after any decoding a server may apply.
func FuzzCanonicalURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/trusted/../evil/tool.wasm",
		"https://EXAMPLE.com.:443/trusted/%2E%2E/evil/tool.wasm",
		"https://example.com/trusted/..%2F..%2Fevil/x",
		"https://example.com/trusted/..;/evil/x",
		"https://example.com/trusted/%252e%252e/evil",
		"http://127.0.0.1:8080/a/./b/../c?x=%7e#f",
		"https://u:p@example.com/x",
		"https://example.com/a%3Ab/x%20y.wasm",
		"https://[::1]/x",
		"https://example.com",
	} {
		f.Add(s, "example.com/trusted/*")
	}
	f.Fuzz(func(t *testing.T, raw, pattern string) {
		c, err := CanonicalURL(raw)
		if err != nil {
			if pu, perr := url.Parse(raw); perr == nil && pu.User != nil {
				if pw, ok := pu.User.Password(); ok && len(pw) > 3 && strings.Contains(err.Error(), pw) && !strings.Contains(pu.Host+pu.Path, pw) {
					t.Fatalf("CanonicalURL(%q): %v shows the password", raw, err)
				}
			}
			return
		}
		again, err := CanonicalURL(c)
		if err != nil || again != c {
			t.Fatalf("CanonicalURL(%q) = %q, but CanonicalURL of that = %q, %v", raw, c, again, err)
		}
		u, err := url.Parse(c)
		if err != nil || u.String() != c {
			t.Fatalf("%q does not parse back to itself", c)
		}
		if u.User != nil || u.Fragment != "" || strings.Contains(c, "#") {
			t.Fatalf("%q has userinfo or a fragment", c)
		}
		// What a server decoding every escape sees: no dot segment, no
		// extra separator, so the segments matched are the segments served.
		decoded, err := url.PathUnescape(u.EscapedPath())
		if err != nil {
			t.Fatalf("%q: %v", c, err)
		}
		escSegs := strings.Split(u.EscapedPath(), "/")
		decSegs := strings.Split(strings.ReplaceAll(decoded, "\\", "/"), "/")
		if len(escSegs) != len(decSegs) {
			t.Fatalf("%q: decoding the path changes its segments: %q", c, decoded)
		}
		for _, s := range decSegs {
			base, _, _ := strings.Cut(s, ";")
			if base == "." || base == ".." {
				t.Fatalf("%q: the server sees a dot segment %q", c, s)
			}
		}
		// A signature pattern the URL matches names the served path: its
		// host, and a directory the decoded path is under (or the path).
		if m, err := sigverify.NewMatcher([]sigverify.Rule{{Pattern: pattern}}, sigverify.Require); err == nil && pattern != "*" {
			if d := m.MatchURL(MatchKey(c)); d.Policy != nil {
				host, ppath, _ := strings.Cut(strings.TrimSuffix(pattern, "/*"), "/")
				dir, err := url.PathUnescape("/" + ppath)
				if !strings.EqualFold(host, u.Host) || err != nil ||
					!(decoded == dir || strings.HasSuffix(pattern, "/*") && strings.HasPrefix(decoded, dir+"/")) {
					t.Fatalf("%q matches pattern %q, which does not name the served path %q", c, pattern, decoded)
				}
			}
		}
		// Any policy prefix of the key, cut at a segment boundary, names
		// a directory the decoded path is under.
		key := MatchKey(c)
		for i := range len(key) {
			if key[i] != '/' {
				continue
			}
			prefix := key[:i+1]
			dir, err := url.PathUnescape(strings.TrimPrefix(prefix, u.Host))
			if err != nil || !strings.HasPrefix(decoded, dir) {
				t.Fatalf("%q: key prefix %q is not a directory of the served path %q", c, prefix, decoded)
			}
		}
	})
}

// TestGetSameHostRedirectAsked: Options.SameHostRedirect sees each redirect
// within the host in canonical form and can refuse it; a target with no
// canonical form is refused before it is asked.
func TestGetSameHostRedirectAsked(t *testing.T) {
	body := module(500)
	mux := http.NewServeMux()
	mux.HandleFunc("/trusted/go", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/trusted/%2E%2E/evil/tool.wasm")
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/trusted/slash", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/trusted/..%2Fevil/tool.wasm")
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/evil/tool.wasm", bytesHandler(body))
	srv := serve(t, mux)
	var asked []string
	opts := Options{SameHostRedirect: func(to string) error {
		asked = append(asked, to)
		return errors.New("not under the pattern")
	}}
	err := getErr(t, context.Background(), srv.URL+"/trusted/go", opts, ErrRedirect)
	contains(t, err, "redirected to "+srv.URL+"/trusted/%2E%2E/evil/tool.wasm: not under the pattern")
	if !slices.Equal(asked, []string{srv.URL + "/evil/tool.wasm"}) {
		t.Errorf("asked about %q, want the canonical target", asked)
	}
	asked = nil
	err = getErr(t, context.Background(), srv.URL+"/trusted/slash", opts, ErrRedirect, ErrNotCanonical)
	contains(t, err, "an encoded / (%2F)")
	if len(asked) > 0 {
		t.Errorf("asked about %q", asked)
	}
}

// TestShowHostAndURLHideCredentials: a config host entry or a URL is shown
// without anything that may be part of a credential, even where the
// parser's idea of the host is a piece of the person's userinfo (a token
// holding a ? or #, a numeric password before one).
func TestShowHostAndURLHideCredentials(t *testing.T) {
	const secret = "S3cretTok"
	for in, want := range map[string]string{
		"https://u:" + secret + "@api.example.com": "https://api.example.com",
		"u:" + secret + "@cdn.example.com":         "cdn.example.com",
		secret + "@cdn.example.com:8443":           "cdn.example.com:8443",
		"cdn.example.com":                          "cdn.example.com",
		"u:" + secret + "@cdn.example.com private": "(an unparsable URL, not shown as it may carry credentials)",
		"ftp://" + secret + "@h":                   "ftp://h",
		"https://" + secret + "?x@host/t.wasm":     "https://… (not shown: it has an @ after the host, so it may carry credentials)",
		"https://u:98765#" + secret + "@host/t":    "https://… (not shown: it has an @ after the host, so it may carry credentials)",
		"https://" + secret + "/x@host/t.wasm":     "https://… (not shown: it has an @ after the host, so it may carry credentials)",
		"u:" + secret + "@cdn.example.com/x?y=@z":  "… (not shown: it has an @ after the host, so it may carry credentials)",
	} {
		got := ShowHost(in)
		if strings.Contains(got, secret) || got != want {
			t.Errorf("ShowHost(%q) = %q, want %q", in, got, want)
		}
	}
}
