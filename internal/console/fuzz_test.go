package console

import (
	"encoding/json"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzGroupsOf: a groups claim is the provider's JSON. Whatever it holds,
// the groups are exactly its strings (a string, or the strings of a list),
// never anything else.
func FuzzGroupsOf(f *testing.F) {
	for _, s := range []string{`["ops","dev"]`, `"ops"`, `[1,"a",null,{"x":"y"},["z"]]`, `{"a":"b"}`, `null`, `42`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		got := groupsOf(v)
		var want []string
		switch v := v.(type) {
		case string:
			want = []string{v}
		case []any:
			for _, g := range v {
				if s, ok := g.(string); ok {
					want = append(want, s)
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("groupsOf(%s) = %q, want %q", data, got, want)
		}
	})
}

// FuzzHostAndOrigin: the Host and Origin headers are the attacker's. A
// Host passes only when it names a loopback address, localhost or a
// configured name; an Origin passes only when it is exactly this
// console's scheme and Host.
func FuzzHostAndOrigin(f *testing.F) {
	for _, s := range [][2]string{
		{"127.0.0.1:8080", "http://127.0.0.1:8080"}, {"localhost", "http://localhost"}, {"[::1]:1", "http://[::1]:1"},
		{"evil.example", "http://evil.example"}, {"warden.example.com:443", "https://warden.example.com:443"},
		{"127.0.0.1.evil.example", "null"}, {"LOCALHOST.", "http://LOCALHOST."}, {"0x7f.1", ""}, {"127.1", "http://127.1"},
	} {
		f.Add(s[0], s[1], false)
	}
	f.Fuzz(func(t *testing.T, host, origin string, tls bool) {
		c := &Console{opts: Options{Hosts: []string{"warden.example.com"}, TLS: tls}}
		ok := c.hostAllowed(host)
		name, _, err := net.SplitHostPort(host)
		if err != nil {
			name = host
		}
		name = strings.TrimSuffix(strings.ToLower(name), ".")
		ip := net.ParseIP(strings.Trim(name, "[]"))
		if ok != (name == "localhost" || name == "warden.example.com" || ip != nil && ip.IsLoopback()) {
			t.Fatalf("hostAllowed(%q) = %v", host, ok)
		}
		r := httptest.NewRequest("POST", "/x", nil)
		r.Host = host
		r.Header.Set("Origin", origin)
		allowed := c.checkOrigin(r) == ""
		if allowed && origin != c.scheme()+"://"+host {
			// url.Parse may normalize; the parsed host and scheme must
			// still be exactly the request's.
			if !strings.EqualFold(origin, c.scheme()+"://"+host) {
				t.Fatalf("Origin %q allowed for Host %q", origin, host)
			}
		}
	})
}

// FuzzUnifiedDiff: the diff of two texts shows every changed line, each
// as it is in the text it comes from, and nothing when they are equal.
func FuzzUnifiedDiff(f *testing.F) {
	f.Add("a: 1\nb: 2\n", "a: 1\nb: 3\n")
	f.Add("", "x\n")
	f.Add("# c\ntools:\n  grants:\n    x: {}\n", "# c\ntools:\n  grants:\n    x: {fs: {read: [docs]}}\n")
	f.Fuzz(func(t *testing.T, before, after string) {
		d := UnifiedDiff("config.yaml", before, after)
		if (d == "") != (before == after) {
			t.Fatalf("diff %q of %q and %q", d, before, after)
		}
		if d == "" {
			return
		}
		lines := strings.Split(strings.TrimSuffix(d, "\n"), "\n")
		if lines[0] != "--- config.yaml" || lines[1] != "+++ config.yaml" {
			t.Fatalf("header %q", lines[:2])
		}
		in := func(text, line string) bool {
			return slices.Contains(strings.Split(strings.TrimSuffix(text, "\n"), "\n"), line)
		}
		plus, minus := 0, 0
		for _, l := range lines[2:] {
			switch {
			case l == "@@":
			case strings.HasPrefix(l, "+"):
				plus++
				if !in(after, l[1:]) {
					t.Fatalf("+%q is not a line of after", l[1:])
				}
			case strings.HasPrefix(l, "-"):
				minus++
				if !in(before, l[1:]) {
					t.Fatalf("-%q is not a line of before", l[1:])
				}
			case strings.HasPrefix(l, " "):
			default:
				t.Fatalf("line %q has no prefix", l)
			}
		}
		count := func(s string) int {
			if s == "" {
				return 0
			}
			return len(strings.Split(strings.TrimSuffix(s, "\n"), "\n"))
		}
		if plus-minus != count(after)-count(before) {
			t.Fatalf("+%d -%d, but the texts have %d and %d lines", plus, minus, count(before), count(after))
		}
	})
}

// FuzzFlowCookie: the OpenID flow cookie comes back from the browser, any
// bytes at all. Only what this console sealed opens, and what it sealed
// opens unchanged.
func FuzzFlowCookie(f *testing.F) {
	// A public client: a random key per process, so that a seed sealed by
	// the fuzzing coordinator is, in a worker, a cookie sealed elsewhere.
	o := &OIDC{Issuer: "https://idp.example", ClientID: "c", RedirectURL: "https://w.example/console/oidc/callback"}
	if err := o.init(); err != nil {
		f.Fatal(err)
	}
	good := o.seal(pendingLogin{State: "st", Nonce: "no", Verifier: "ve", Expires: 42})
	for _, s := range []string{good, "", "x", good[:len(good)-1], strings.Repeat("A", 64), "%%%"} {
		f.Add(s, "state", int64(7))
	}
	f.Fuzz(func(t *testing.T, value, state string, expires int64) {
		if p, ok := o.open(value); ok && value != good {
			t.Fatalf("a cookie not sealed here opened: %q → %+v", value, p)
		}
		want := pendingLogin{State: state, Nonce: value, Verifier: state, Expires: expires}
		if got, ok := o.open(o.seal(want)); !ok || got != want {
			if utf8Valid(state) && utf8Valid(value) {
				t.Fatalf("round trip %+v → %+v %v", want, got, ok)
			}
		}
	})
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }
