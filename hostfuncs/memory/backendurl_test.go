package memory

import (
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestPostgresID: the id logs and start-up errors show names user, host and
// database as pgx reads them, never the password, whatever characters it
// holds.
func TestPostgresID(t *testing.T) {
	for raw, want := range map[string]string{
		"postgres://u:hunter2@127.0.0.1:5432/db?sslmode=disable": "postgres://u@127.0.0.1:5432/db",
		"postgresql://u:hunter2@db.example/notes":                "postgres://u@db.example/notes",
		"postgres://u:12?hunter2@h/db":                           "postgres://u@h/db", // net/url: host u, port 12
		"postgres://u:hun#ter2@h/db":                             "postgres://u@h/db",
		"postgres://h/db?password=hunter2":                       "postgres://h/db",
		"postgres://:hunter2@h/db":                               "postgres://h/db",
		"postgres://u@h/db":                                      "postgres://u@h/db",
	} {
		if got := postgresID(raw); got != want {
			t.Errorf("postgresID(%q) = %q, want %q", raw, got, want)
		}
	}
}

// marker stands for a password in FuzzPostgresBackendURL: the fuzzer
// writes around it, and inputs that hold it elsewhere are skipped.
const marker = "Zq9Pw7Zq"

// FuzzPostgresBackendURL: for a memory.backend URL whose password holds
// marker, whatever else it holds, no text warden or pgx shows of it does:
// not CheckBackend's error, not postgresID, not pgx's parse error, and,
// for a URL CheckBackend accepts, not the user, hosts or database pgx's
// connection errors name.
func FuzzPostgresBackendURL(f *testing.F) {
	for _, s := range [][3]string{
		{"u", "", "127.0.0.1:5432/db"},
		{"u", "12/", "h/db"},
		{"u", "12?", "h/db"},
		{"u", "p@", "h/db"},
		{"u", "#", "h/db?sslmode=bogus"},
		{"u", " ", "h:bad/db"},
		{"u", "%zz", "h/db"},
		{"u", "a:b/", "h,h2:5433/db?x=@y"},
		{"", "x", "[::1]:5432/db?password=x"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, user, pwHead, rest string) {
		if strings.Contains(user+pwHead+rest, marker[:4]) {
			t.Skip()
		}
		// Parameters naming files pgx reads (sslkey=/dev/stdin would
		// block): not what this target is about.
		if _, q, ok := strings.Cut(rest, "?"); ok {
			dec, _ := url.QueryUnescape(q)
			if dec = strings.ToLower(dec); strings.Contains(dec, "ssl") || strings.Contains(dec, "file") || strings.Contains(dec, "service") {
				t.Skip()
			}
		}
		raw := "postgres://" + user + ":" + pwHead + marker + "@" + rest
		check := CheckBackend(raw)
		if check != nil {
			if strings.Contains(check.Error(), marker) {
				t.Fatalf("CheckBackend(%q) = %q", raw, check)
			}
			return
		}
		if id := postgresID(raw); strings.Contains(id, marker) {
			t.Fatalf("postgresID(%q) = %q", raw, id)
		}
		cfg, err := pgconn.ParseConfig(raw)
		if err != nil {
			if strings.Contains(err.Error(), marker) {
				t.Fatalf("pgconn.ParseConfig(%q): %v", raw, err)
			}
			return
		}
		shown := []string{cfg.User, cfg.Host, cfg.Database}
		for _, fb := range cfg.Fallbacks {
			shown = append(shown, fb.Host)
		}
		for _, s := range shown {
			if strings.Contains(s, marker) {
				t.Fatalf("pgx reads %q from %q: its connection errors would show the password", s, raw)
			}
		}
	})
}
