package download

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzURL checks the URL rules on arbitrary input: no panic, a URL that
// passes is https (or http on loopback) without userinfo, and what an error
// shows never carries a password or raw control characters.
func FuzzURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/x.wasm",
		"http://127.0.0.1:8080/x.wasm",
		"http://[::1]/x",
		"http://u:secretpw@localhost/x",
		"https://EXAMPLE.com:443/x?y#z",
		"http://localhost\x1b[2J/",
		"ftp://x/",
		"%zz",
		"https://a@b@c/",
	} {
		f.Add(s, "example.com:443")
	}
	f.Fuzz(func(t *testing.T, raw, entry string) {
		shown := ShowURL(raw)
		if strings.ContainsAny(shown, "\x00\x1b\r\n\x7f") {
			t.Fatalf("ShowURL(%q) = %q has raw controls", raw, shown)
		}
		u, err := parseURL(raw)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\x00\x1b\r\n\x7f") {
				t.Fatalf("error %q has raw controls", err)
			}
			if pu, perr := url.Parse(raw); perr == nil && pu.User != nil {
				if pw, ok := pu.User.Password(); ok && len(pw) > 3 && strings.Contains(shown, pw) && !strings.Contains(pu.Host+pu.Path, pw) {
					t.Fatalf("ShowURL(%q) = %q shows the password", raw, shown)
				}
			}
			return
		}
		if u.User != nil || u.Hostname() == "" {
			t.Fatalf("parseURL(%q) accepted userinfo or no host", raw)
		}
		if u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname())) {
			t.Fatalf("parseURL(%q) accepted scheme %q host %q", raw, u.Scheme, u.Hostname())
		}
		if allowedHost(entry, u) && !strings.Contains(strings.ToLower(entry), strings.ToLower(strings.Trim(u.Hostname(), "[]"))) {
			t.Fatalf("allowedHost(%q, %q) is true", entry, u.Host)
		}
		_ = hostKey(u)
		_ = configHost(u)
	})
}

func TestAllowedHost(t *testing.T) {
	for _, c := range []struct {
		entry, url string
		want       bool
	}{
		{"objects.githubusercontent.com", "https://objects.githubusercontent.com/x", true},
		{"Objects.GitHubUserContent.com", "https://objects.githubusercontent.com:443/x", true},
		{"objects.githubusercontent.com:443", "https://objects.githubusercontent.com/x", true},
		{"objects.githubusercontent.com", "https://objects.githubusercontent.com:8443/x", false},
		{"objects.githubusercontent.com:8443", "https://objects.githubusercontent.com:8443/x", true},
		{"githubusercontent.com", "https://objects.githubusercontent.com/x", false},
		{"*.githubusercontent.com", "https://objects.githubusercontent.com/x", false},
		{"https://objects.githubusercontent.com", "https://objects.githubusercontent.com/x", false},
		{"[::1]:9000", "http://[::1]:9000/x", true},
		{"localhost", "http://localhost/x", true},
		{"", "https://example.com/", false},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := allowedHost(c.entry, u); got != c.want {
			t.Errorf("allowedHost(%q, %s) = %v, want %v", c.entry, c.url, got, c.want)
		}
	}
	for in, want := range map[string]string{
		"https://Example.com/x":      "example.com",
		"https://example.com:443/x":  "example.com",
		"https://example.com:8443/x": "example.com:8443",
		"http://localhost:80/x":      "localhost",
		"http://[::1]:81/x":          "[::1]:81",
		"https://[::1]/x":            "[::1]",
	} {
		u, _ := url.Parse(in)
		if got := configHost(u); got != want {
			t.Errorf("configHost(%s) = %q, want %q", in, got, want)
		}
	}
}
