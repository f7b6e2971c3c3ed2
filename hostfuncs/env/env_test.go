package env

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/tool"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (r *recorder) Progress(p tool.Progress) { r.Log(slog.LevelInfo, p.Message) }
func (r *recorder) Log(level slog.Level, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(&r.buf, level, msg)
}

const (
	literalSecret = "lit-s3cret-0xdeadbeef"
	hostSecret    = "host-s3cret-0xfeedface"
)

func testConfig() Config {
	return Config{Values: map[string]Value{
		"API_TOKEN":    {Value: literalSecret},
		"github_token": {FromEnv: "WARDEN_TEST_HOST_TOKEN"}, // lower case, as viper hands it over
		"UNSET_VAR":    {FromEnv: "WARDEN_TEST_NEVER_SET"},
		"NOT_GRANTED":  {Value: literalSecret + "-other"},
	}}
}

type fixture struct {
	env  *Env
	logs *strings.Builder
	obs  *recorder
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	t.Setenv("WARDEN_TEST_HOST_TOKEN", hostSecret)
	f := &fixture{logs: &strings.Builder{}, obs: &recorder{}}
	var err error
	f.env, err = New(testConfig(), slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) call(grants ...string) *hostfuncs.Call {
	return &hostfuncs.Call{Tool: "t", Grants: tool.Capabilities{Env: grants}, Observer: f.obs}
}

func (f *fixture) serve(t *testing.T, call *hostfuncs.Call, raw string) (any, error) {
	t.Helper()
	out, err := f.env.Serve(t.Context(), call, []byte(raw))
	if err != nil && out != nil {
		t.Fatalf("Serve returned both %v and %v", out, err)
	}
	return out, err
}

func wantKind(t *testing.T, err error, kind tool.Kind) {
	t.Helper()
	if got := tool.KindOf(err); got != kind {
		t.Fatalf("error kind = %q (%v), want %q", got, err, kind)
	}
}

func TestGet(t *testing.T) {
	f := newFixture(t)
	call := f.call("API_TOKEN", "GITHUB_TOKEN", "UNSET_VAR", "MISSING")
	out, err := f.serve(t, call, `{"op":"get","key":"API_TOKEN"}`)
	if err != nil || out != (getReply{Key: "API_TOKEN", Value: literalSecret}) {
		t.Fatalf("literal: %v %v", out, err)
	}
	out, err = f.serve(t, call, `{"op":"get","key":"GITHUB_TOKEN"}`)
	if err != nil || out != (getReply{Key: "GITHUB_TOKEN", Value: hostSecret}) {
		t.Fatalf("from_env: %v %v", out, err)
	}
	// from_env is read at each request.
	t.Setenv("WARDEN_TEST_HOST_TOKEN", "rotated")
	out, err = f.serve(t, call, `{"op":"get","key":"GITHUB_TOKEN"}`)
	if err != nil || out.(getReply).Value != "rotated" {
		t.Fatalf("rotated: %v %v", out, err)
	}
	for _, key := range []string{"UNSET_VAR", "MISSING"} {
		_, err = f.serve(t, call, `{"op":"get","key":"`+key+`"}`)
		wantKind(t, err, tool.KindNotFound)
		if !strings.Contains(err.Error(), "env.values."+key) {
			t.Fatalf("message %q does not name the config key", err)
		}
	}
}

func TestList(t *testing.T) {
	f := newFixture(t)
	out, err := f.serve(t, f.call("UNSET_VAR", "GITHUB_TOKEN", "API_TOKEN", "api_token", "MISSING", "bad key"), `{"op":"list"}`)
	if err != nil || !slices.Equal(out.(listReply).Keys, []string{"API_TOKEN", "GITHUB_TOKEN"}) {
		t.Fatalf("list: %v %v", out, err)
	}
	out, err = f.serve(t, f.call("MISSING"), `{"op":"list"}`)
	if err != nil || out.(listReply).Keys == nil || len(out.(listReply).Keys) != 0 {
		t.Fatalf("empty list: %#v %v", out, err)
	}
}

func TestDenied(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name   string
		grants []string
		raw    string
		want   string
	}{
		{"no grant get", nil, `{"op":"get","key":"API_TOKEN"}`, "tools.grants.t.env"},
		{"no grant list", nil, `{"op":"list"}`, "tools.grants.t.env"},
		{"no grant garbage", nil, `garbage`, "tools.grants.t.env"},
		{"configured but not granted", []string{"API_TOKEN"}, `{"op":"get","key":"NOT_GRANTED"}`, `"NOT_GRANTED" is not granted`},
		{"unconfigured and not granted", []string{"API_TOKEN"}, `{"op":"get","key":"HOME"}`, `"HOME" is not granted`},
		{"host variable by its own name", []string{"GITHUB_TOKEN"}, `{"op":"get","key":"WARDEN_TEST_HOST_TOKEN"}`, "is warden's own configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.serve(t, f.call(tc.grants...), tc.raw)
			wantKind(t, err, tool.KindDenied)
			if !strings.Contains(err.Error(), tc.want) || out != nil {
				t.Fatalf("%v %v, want a message with %q", out, err, tc.want)
			}
		})
	}
	// Denied and not-found keys are indistinguishable to a tool without the
	// grant: both are denied.
	_, err1 := f.serve(t, f.call("X"), `{"op":"get","key":"NOT_GRANTED"}`)
	_, err2 := f.serve(t, f.call("X"), `{"op":"get","key":"NOPE"}`)
	if strings.ReplaceAll(err1.Error(), "NOT_GRANTED", "NOPE") != err2.Error() {
		t.Fatalf("denials differ: %q vs %q", err1, err2)
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t)
	call := f.call("API_TOKEN")
	for _, raw := range []string{
		``, `[]`, `{"op":"get","key":"API_TOKEN"} {}`, `{"op":"get"}`, `{"op":"get","key":""}`,
		`{"op":"get","key":"A=B"}`, `{"op":"get","key":"1A"}`, `{"op":"get","key":"API_TOKEN","x":1}`,
		`{"op":"list","key":"API_TOKEN"}`, `{"op":"set","key":"API_TOKEN"}`, `{"key":"API_TOKEN"}`,
	} {
		out, err := f.serve(t, call, raw)
		if tool.KindOf(err) != tool.KindInvalidArguments || out != nil {
			t.Errorf("%s: %v %v", raw, out, err)
		}
	}
}

func TestSetConfig(t *testing.T) {
	f := newFixture(t)
	call := f.call("API_TOKEN", "NEW")
	if err := f.env.SetConfig(Config{Values: map[string]Value{"NEW": {Value: "v2"}}}); err != nil {
		t.Fatal(err)
	}
	_, err := f.serve(t, call, `{"op":"get","key":"API_TOKEN"}`)
	wantKind(t, err, tool.KindNotFound)
	out, err := f.serve(t, call, `{"op":"get","key":"NEW"}`)
	if err != nil || out.(getReply).Value != "v2" {
		t.Fatalf("after SetConfig: %v %v", out, err)
	}
	bad := Config{Values: map[string]Value{
		"BOTH":    {Value: literalSecret, FromEnv: "X"},
		"NEITHER": {},
		"bad key": {Value: literalSecret},
		"DUP":     {Value: literalSecret},
		"dup":     {Value: literalSecret},
		"EQ":      {FromEnv: "A=" + literalSecret},
	}}
	err = f.env.SetConfig(bad)
	if err == nil {
		t.Fatal("SetConfig accepted an invalid config")
	}
	for _, want := range []string{"env.values.BOTH", "env.values.NEITHER", "env.values.bad key", "env.values.dup", "env.values.EQ"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("validation error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), literalSecret) {
		t.Fatalf("validation error leaks a value:\n%v", err)
	}
	out, err = f.serve(t, call, `{"op":"get","key":"NEW"}`)
	if err != nil || out.(getReply).Value != "v2" {
		t.Fatalf("a refused config changed the live one: %v %v", out, err)
	}
}

// TestValuesNeverLeak runs every path and checks that no value reaches the
// log, the call's observer, an error message, or a printed Config.
func TestValuesNeverLeak(t *testing.T) {
	f := newFixture(t)
	var errs []string
	for _, grants := range [][]string{nil, {"API_TOKEN"}, {"GITHUB_TOKEN", "UNSET_VAR", "MISSING"}} {
		for _, raw := range []string{
			`{"op":"get","key":"API_TOKEN"}`, `{"op":"get","key":"GITHUB_TOKEN"}`, `{"op":"get","key":"NOT_GRANTED"}`,
			`{"op":"get","key":"UNSET_VAR"}`, `{"op":"get","key":"MISSING"}`, `{"op":"list"}`, `garbage`,
		} {
			if _, err := f.serve(t, f.call(grants...), raw); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	cfg := testConfig()
	var printed strings.Builder
	fmt.Fprintf(&printed, "%v %+v %#v %s", cfg, cfg, cfg, cfg.Values["API_TOKEN"])
	slog.New(slog.NewJSONHandler(&printed, nil)).Info("config", "cfg", cfg, "value", cfg.Values["API_TOKEN"])
	slog.New(slog.NewTextHandler(&printed, nil)).Info("config", "values", cfg.Values)
	if !strings.Contains(f.logs.String(), "key=API_TOKEN") || !strings.Contains(printed.String(), "[redacted]") {
		t.Fatalf("the checks below would prove nothing:\n%s\n%s", f.logs, printed.String())
	}
	for where, text := range map[string]string{
		"log": f.logs.String(), "observer": f.obs.buf.String(), "errors": strings.Join(errs, "\n"), "printed config": printed.String(),
	} {
		for _, secret := range []string{literalSecret, hostSecret} {
			if strings.Contains(text, secret) {
				t.Errorf("%s leaks a value:\n%s", where, text)
			}
		}
	}
	// The replies themselves do carry the values: that is the point.
	out, _ := f.serve(t, f.call("API_TOKEN"), `{"op":"get","key":"API_TOKEN"}`)
	if raw, _ := json.Marshal(out); !strings.Contains(string(raw), literalSecret) {
		t.Fatalf("reply %s lacks the value", raw)
	}
}

// TestWardenKeysNeverGranted: a WARDEN_* key, in any case, is warden's own
// configuration (viper reads WARDEN_SERVER_TOKEN as server.token). It is
// refused as a grant or request (ValidateKey), as an env.values key, and at
// call time even if a grant slipped through, without a Need, so that no
// permission prompt offers it; list never names one.
func TestWardenKeysNeverGranted(t *testing.T) {
	for _, key := range []string{"WARDEN_SERVER_TOKEN", "warden_server_token", "Warden_X", "WARDEN_"} {
		if err := ValidateKey(key); err == nil || !strings.Contains(err.Error(), "is warden's own configuration") {
			t.Errorf("ValidateKey(%q) = %v", key, err)
		}
	}
	for _, key := range []string{"WARDEN", "WARDENX", "MY_WARDEN_TOKEN"} {
		if err := ValidateKey(key); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", key, err)
		}
	}
	err := Config{Values: map[string]Value{"warden_server_token": {FromEnv: "WARDEN_SERVER_TOKEN"}}}.Validate()
	if err == nil || err.Error() != "env.values.warden_server_token: a WARDEN_* key is warden's own configuration and can never be granted to a tool; name it otherwise" {
		t.Fatalf("Validate: %v", err)
	}

	t.Setenv("WARDEN_SERVER_TOKEN", hostSecret)
	f := newFixture(t)
	// A config the capability would never get (Validate refuses it),
	// forced in to check the call-time gate on its own.
	f.env.values.Store(&map[string]Value{"WARDEN_SERVER_TOKEN": {FromEnv: "WARDEN_SERVER_TOKEN"}})
	call := f.call("WARDEN_SERVER_TOKEN", "warden_server_token")
	for _, key := range []string{"WARDEN_SERVER_TOKEN", "warden_Server_token"} {
		out, err := f.serve(t, call, `{"op":"get","key":"`+key+`"}`)
		wantKind(t, err, tool.KindDenied)
		want := `env: key "` + key + `" is warden's own configuration (WARDEN_*); no grant can give it to tool "t"`
		if te := err.(*tool.Error); out != nil || te.Message != want || te.Need != nil {
			t.Fatalf("get %s: %v %v (need %v), want %q without a need", key, out, err, te.Need, want)
		}
	}
	out, err := f.serve(t, call, `{"op":"list"}`)
	if err != nil || len(out.(listReply).Keys) != 0 {
		t.Fatalf("list: %v %v", out, err)
	}
	if strings.Contains(f.logs.String(), hostSecret) {
		t.Fatal("the value was logged")
	}
}

// TestKeySpellings: a key is one key in every case, on the grant, the
// request and env.values alike (foldKey): each spelling gets the same
// decision and the same value, and a near miss gets nothing.
func TestKeySpellings(t *testing.T) {
	f := newFixture(t)
	for _, grant := range []string{"API_TOKEN", "api_token", "Api_Token"} {
		for _, key := range []string{"API_TOKEN", "api_token", "aPI_tOKEN"} {
			out, err := f.serve(t, f.call(grant), `{"op":"get","key":"`+key+`"}`)
			if err != nil || out.(getReply).Value != literalSecret {
				t.Errorf("grant %s, get %s: %v %v", grant, key, out, err)
			}
		}
		for _, key := range []string{"API_TOKE", "API_TOKEN_", "NOT_GRANTED", "not_granted"} {
			_, err := f.serve(t, f.call(grant), `{"op":"get","key":"`+key+`"}`)
			wantKind(t, err, tool.KindDenied)
		}
	}
	for _, key := range []string{"API_TOKEN ", "API-TOKEN", "API_TOKEN\u017f", "ΑPI_TOKEN"} {
		_, err := f.serve(t, f.call("API_TOKEN", key), `{"op":"get","key":"`+key+`"}`)
		wantKind(t, err, tool.KindInvalidArguments)
	}
}

// TestValidateKeyShowsNoCredential: a URL or KEY=VALUE where a key goes is
// refused without what precedes the @ (or follows the =): the refusal
// reaches the terminal and the logs.
func TestValidateKeyShowsNoCredential(t *testing.T) {
	const secret = "hunter2hunter2"
	for key, want := range map[string]string{
		"https://u:" + secret + "@api.example.com": `"https://api.example.com" (shown without what precedes the @) is not a key`,
		secret + "@host":              `"host" (shown without what precedes the @) is not a key`,
		"tok/" + secret + "@host":     `(not shown: it has an @ after the host, so it may carry credentials)" (shown without what precedes the @) is not a key`,
		"TOKEN=u:" + secret + "@host": `"TOKEN=…" is not a key`,
	} {
		err := ValidateKey(key)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), secret) {
			t.Errorf("ValidateKey(%q) = %v, want it to contain %s and not the secret", key, err, want)
		}
	}
}
