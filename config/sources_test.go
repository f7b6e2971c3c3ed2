package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/download"
	"github.com/warden-run/warden/internal/sigverify"
)

var (
	pinHex    = strings.Repeat("ab", 32)
	digestHex = "sha256:" + strings.Repeat("cd", 32)
)

func TestSourcesValid(t *testing.T) {
	body := `tools:
  pins: {fetch: ` + pinHex + `, dl: ` + pinHex + `}
  sources:
    fetch: {ref: "oci://ghcr.io/acme/fetch:1.2.0", digest: "` + digestHex + `"}
    dl: {ref: "https://example.com/r/v1/dl.wasm", digest: "` + digestHex + `"}
  fetch: {max_size: 8MiB, timeout: 30s, redirect_hosts: [objects.githubusercontent.com]}
  descriptors:
    fetch: {Fetch_URL: "` + digestHex + `"}
security:
  signature_mode: warn
  descriptor_checks: refuse
  signatures:
    "ghcr.io/acme/*": {identity_regexp: 'https://github\.com/acme/.+', issuer: https://token.actions.githubusercontent.com}
    "example.com/r/*": {key: keys/r.pub, mode: require}
    "localhost:5000/*": {mode: "off"}
`
	cfg, err := Load(writeConfig(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Tools.Sources["fetch"]; s.Ref != "oci://ghcr.io/acme/fetch:1.2.0" || s.Digest != digestHex {
		t.Errorf("sources.fetch = %+v", s)
	}
	if cfg.Tools.Descriptors["fetch"]["fetch_url"] != digestHex || cfg.Security.DescriptorChecks != "refuse" {
		t.Errorf("descriptors = %v, descriptor_checks = %q", cfg.Tools.Descriptors, cfg.Security.DescriptorChecks)
	}
	if cfg.Tools.Fetch.MaxSize != 8<<20 || cfg.Tools.Fetch.RedirectHosts[0] != "objects.githubusercontent.com" {
		t.Errorf("fetch = %+v", cfg.Tools.Fetch)
	}
	if k := cfg.Security.Signatures["example.com/r/*"].Key; k != filepath.Join(cfg.Dir, "keys/r.pub") {
		t.Errorf("key path not resolved against the config: %s", k)
	}
	// The key file does not exist: the matcher, built at install time,
	// names the key that failed.
	if _, err := cfg.SignatureMatcher(); err == nil || !strings.Contains(err.Error(), `security.signatures."example.com/r/*".key`) {
		t.Errorf("matcher with a missing key file: %v", err)
	}
	os.MkdirAll(filepath.Join(cfg.Dir, "keys"), 0o755)
	os.WriteFile(filepath.Join(cfg.Dir, "keys/r.pub"), []byte("-----BEGIN PUBLIC KEY-----\n"), 0o644)
	m, err := cfg.SignatureMatcher()
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]sigverify.Mode{
		"ghcr.io/acme/fetch:1.2.0":      sigverify.Require,
		"example.com/r/v1/dl.wasm":      sigverify.Require,
		"localhost:5000/anything:1":     sigverify.Off,
		"docker.io/someone/else:latest": sigverify.Warn,
	} {
		if got := m.Match(ref).Mode; got != want {
			t.Errorf("Match(%s) = %s, want %s", ref, got, want)
		}
	}
}

func TestSourcesInvalid(t *testing.T) {
	pins := "  pins: {m: " + pinHex + "}\n"
	for body, want := range map[string]string{
		"tools:\n" + pins + "  sources: {m: {ref: ghcr.io/acme/m:1, digest: " + digestHex + "}}":                                                          "tools.sources.m.ref: \"ghcr.io/acme/m:1\" is neither oci://",
		"tools:\n" + pins + "  sources: {m: {ref: \"oci://ghcr.io/acme/m\", digest: " + digestHex + "}}":                                                  "names no tag or digest",
		"tools:\n" + pins + "  sources: {m: {ref: \"https://u:s3cretpw@example.com/m.wasm\", digest: " + digestHex + "}}":                                 "tools.sources.m.ref: https://example.com/m.wasm: insecure URL refused: the URL carries credentials",
		"tools:\n" + pins + "  sources: {m: {ref: \"oci://u:s3cretpw@ghcr.io/acme/m:1\", digest: " + digestHex + "}}":                                     "tools.sources.m.ref: oci://[redacted]@ghcr.io…: the reference carries credentials",
		"tools:\n" + pins + "  sources: {m: {ref: \"https://example.com/m/..%2Fx.wasm\", digest: " + digestHex + "}}":                                     "an encoded / (%2F)",
		"tools:\n" + pins + "  sources: {m: {ref: \"oci://ghcr.io/acme/m:1\", digest: " + digestHex + ", name: n}}":                                       "tools.sources.m.name: \"n\" is not the module m in other case",
		"tools:\n" + pins + "  sources: {m: {ref: \"oci://ghcr.io/acme/m:1\", digest: sha256:abc}}":                                                       "tools.sources.m.digest: must be sha256:<64 lowercase hex>",
		"tools:\n  sources: {m: {ref: \"oci://ghcr.io/acme/m:1\", digest: " + digestHex + "}}":                                                            "has no tools.pins.m",
		"tools:\n" + pins + "  sources: {m: {ref: \"oci://ghcr.io/acme/m:1\", digest: " + digestHex + ", signer: " + strings.Repeat("x", 16<<10+1) + "}}": "tools.sources.m.signer: is 16385 bytes, more than 16384",
		"tools: {fetch: {max_size: 10}}":                                                "tools.fetch.max_size: must be between 1KiB and 1GiB",
		"tools: {fetch: {timeout: 0s}}":                                                 "tools.fetch.timeout: must be positive",
		"tools: {fetch: {redirect_hosts: ['a/b']}}":                                     "tools.fetch.redirect_hosts",
		"security: {signature_mode: maybe}":                                             "security.signature_mode: must be require, warn or off",
		"security: {descriptor_checks: maybe}":                                          "security.descriptor_checks: must be auto, warn, confirm or refuse, got \"maybe\"",
		"tools: {descriptors: {m: {t: sha256:abc}}}":                                    "tools.descriptors.m.t: must be sha256:<64 lowercase hex>",
		"security: {signatures: {'ghcr.io/a/*': {identity: x}}}":                        "needs exactly one of issuer or issuer_regexp",
		"security: {signatures: {'ghcr.io/a/*': {issuer: x}}}":                          "needs exactly one of identity or identity_regexp",
		"security: {signatures: {'ghcr.io/a/*': {key: k.pub, identity: x, issuer: y}}}": "either a public key or a keyless identity",
		"security: {signatures: {'ghcr.io/a/*': {identity_regexp: '(', issuer: y}}}":    "identity_regexp",
		"security: {signatures: {'ghcr.io/a:1': {key: k}}}":                             "security.signatures",
		"security: {signatures: {'ghcr.io/a/*': {mode: often}}}":                        "mode: must be require, warn or off",
		"security: {tuf_url: 'http://tuf.example.com'}":                                 "security.tuf_url: \"http://tuf.example.com\": plain http:// is allowed only for loopback hosts",
		"security: {tuf_url: 'ftp://tuf.example.com'}":                                  "security.tuf_url: \"ftp://tuf.example.com\" is not an https:// URL",
		"security: {tuf_url: 'tuf.example.com'}":                                        "security.tuf_url",
		"security: {tuf_url: 'https://u:s3cretpw@tuf.example.com'}":                     "security.tuf_url: \"https://tuf.example.com\": the URL must carry no user:password or #fragment",
		"security: {tuf_url: 'https://u:s3cr/etpw@tuf.example.com'}":                    "security.tuf_url: \"(an unparsable URL, not shown as it may carry credentials)\" is not a URL",
		"security: {tuf_url: 'https:///x'}":                                             "security.tuf_url: \"https:///x\" names no host",
		"security: {tuf_root: root.json}":                                               "security.tuf_root: is the root.json of the repository security.tuf_url names, and tuf_url is not set",
	} {
		_, err := Load(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n  got  %v\n  want %q", body, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "s3cr") || strings.Contains(err.Error(), "etpw")) {
			t.Errorf("%s: the error shows the password: %v", body, err)
		}
	}
}

// TestTUFKeys: security.tuf_url takes https, and http for loopback hosts
// only; security.tuf_root is resolved against the config's directory.
func TestTUFKeys(t *testing.T) {
	cfg, err := Load(writeConfig(t, "security: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Security.TUFURL != "" || cfg.Security.TUFRoot != "" {
		t.Errorf("defaults: tuf_url %q, tuf_root %q", cfg.Security.TUFURL, cfg.Security.TUFRoot)
	}
	for _, u := range []string{"https://tuf.example.com", "https://tuf.example.com/prod/", "http://127.0.0.1:8080", "http://localhost/tuf", "http://[::1]:9"} {
		path := writeConfig(t, "security: {tuf_url: '"+u+"', tuf_root: keys/root.json}\n")
		os.MkdirAll(filepath.Join(filepath.Dir(path), "keys"), 0o755)
		os.WriteFile(filepath.Join(filepath.Dir(path), "keys", "root.json"), []byte("{}"), 0o644)
		cfg, err := Load(path)
		if err != nil {
			t.Errorf("%s: %v", u, err)
			continue
		}
		if cfg.Security.TUFURL != u || cfg.Security.TUFRoot != filepath.Join(cfg.Dir, "keys", "root.json") {
			t.Errorf("%s: tuf_url %q, tuf_root %q", u, cfg.Security.TUFURL, cfg.Security.TUFRoot)
		}
	}
}

// TestSetSource: install writes the pin and the source in one edit; a
// local install deletes the source; bad values are refused before any edit.
func TestSetSource(t *testing.T) {
	d, err := ParseDocument([]byte("# lock\ntools:\n  pins: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Pin("fetch", pinHex); err != nil {
		t.Fatal(err)
	}
	// The signer as install records a keyless one: YAML must keep it as is.
	src := Source{Ref: "oci://ghcr.io/acme/fetch:1.2.0", Digest: digestHex,
		Signer: `https://github.com/acme/fetch/.github/workflows/release.yml@refs/tags/v1.2.0 (issuer https://token.actions.githubusercontent.com) #x: "y' \x1b`}
	if err := d.SetSource("Fetch", src); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, string(d.Bytes()))
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, d.Bytes())
	}
	// Config keys are lower case; the name keeps how the module is spelled.
	want := src
	want.Name = "Fetch"
	if cfg.Tools.Sources["fetch"] != want || !strings.HasPrefix(string(d.Bytes()), "# lock\n") {
		t.Fatalf("source %+v in\n%s", cfg.Tools.Sources, d.Bytes())
	}
	if err := d.SetSource("fetch", Source{Ref: "ftp://x/y", Digest: digestHex}); err == nil {
		t.Error("SetSource took an ftp ref")
	}
	if err := d.SetSource("fetch", Source{Ref: src.Ref, Digest: "sha256:xyz"}); err == nil {
		t.Error("SetSource took a bad digest")
	}
	if err := d.SetSource("fetch", Source{Ref: src.Ref, Digest: digestHex, Signer: strings.Repeat("x", maxSignerLen+1)}); err == nil ||
		!strings.Contains(err.Error(), "tools.sources.fetch.signer: 16385 bytes, more than 16384") {
		t.Errorf("SetSource of an oversized signer: %v", err)
	}
	if err := d.DeleteSource("fetch"); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(writeConfig(t, string(d.Bytes())))
	if err != nil || len(cfg.Tools.Sources) != 0 {
		t.Fatalf("after DeleteSource: %v %+v\n%s", err, cfg, d.Bytes())
	}
}

// TestCanonicalSourceRef: one form per source, and install records it.
func TestCanonicalSourceRef(t *testing.T) {
	for in, want := range map[string]string{
		"oci://GHCR.io/acme/fetch:1.2.0":                    "oci://ghcr.io/acme/fetch:1.2.0",
		"oci://ghcr.io.:443/acme/fetch:1.2.0":               "oci://ghcr.io/acme/fetch:1.2.0",
		"oci://localhost:5000/acme/fetch@" + digestHex:      "oci://localhost:5000/acme/fetch@" + digestHex,
		"oci://[::1]:443/acme/fetch:1":                      "oci://[::1]/acme/fetch:1",
		"HTTPS://Example.COM:443/trusted/../evil/x.wasm":    "https://example.com/evil/x.wasm",
		"https://example.com/trusted/%2e%2E/evil/x%7e.wasm": "https://example.com/evil/x~.wasm",
	} {
		got, err := CanonicalSourceRef(in)
		if err != nil || got != want {
			t.Errorf("CanonicalSourceRef(%q) = %q, %v; want %q", in, got, err, want)
		}
		if again, err := CanonicalSourceRef(got); again != got || err != nil {
			t.Errorf("CanonicalSourceRef(%q) = %q, %v: not a fixed point", got, again, err)
		}
	}
	d, err := ParseDocument([]byte("tools:\n  pins: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Pin("Tool", pinHex); err != nil {
		t.Fatal(err)
	}
	if err := d.SetSource("Tool", Source{Ref: "https://Example.com/a/../tool.wasm", Digest: digestHex}); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(writeConfig(t, string(d.Bytes())))
	if err != nil {
		t.Fatalf("%v\n%s", err, d.Bytes())
	}
	if got, want := cfg.Tools.Sources["tool"], (Source{Ref: "https://example.com/tool.wasm", Digest: digestHex, Name: "Tool"}); got != want {
		t.Errorf("tools.sources.tool = %+v, want %+v", got, want)
	}
}

// TestSignaturePatternCase: viper lowers config keys, but a URL path is
// case-sensitive: the matcher compares a URL with each pattern as the
// file writes it (its host ignoring case); OCI references ignore case.
func TestSignaturePatternCase(t *testing.T) {
	cfg, err := Load(writeConfig(t, `security:
  signatures:
    "Example.com/Trusted/*": {mode: "off"}
`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := cfg.SignatureMatcher()
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]sigverify.Mode{
		"example.com/Trusted/tool.wasm": sigverify.Off,
		"example.com/trusted/tool.wasm": sigverify.Require,
		"example.com/TRUSTED/tool.wasm": sigverify.Require,
	} {
		if got := m.MatchURL(key).Mode; got != want {
			t.Errorf("MatchURL(%s) = %s, want %s", key, got, want)
		}
	}
	if got := m.Match("example.com/trusted/tool:1").Mode; got != sigverify.Off {
		t.Errorf("Match(an OCI reference) = %s, want off", got)
	}
}

// TestSignaturePatternCanonical: sources are matched in their canonical
// form (download.CanonicalURL, oci.CanonicalRef), so a pattern in any other
// spelling would load and never match, and a require rule in it would give
// way to a weaker one. Load refuses it, naming the spelling to write; a
// canonical pattern (its host in any case) loads and matches.
func TestSignaturePatternCanonical(t *testing.T) {
	for pattern, want := range map[string]string{
		"example.com:443/trusted/*":  `security.signatures."example.com:443/trusted/*": write it as "example.com/trusted/*" (the canonical form sources are matched in`,
		"Example.com./releases/*":    `security.signatures."Example.com./releases/*": write it as "example.com/releases/*"`,
		"example.com/%7euser/*":      `security.signatures."example.com/%7euser/*": write it as "example.com/~user/*"`,
		"example.com/a%3ab/*":        `security.signatures."example.com/a%3ab/*": write it as "example.com/a%3Ab/*"`,
		"example.com/a/../trusted/*": `security.signatures."example.com/a/../trusted/*": write it as "example.com/trusted/*"`,
		"ghcr.io:443/acme/*":         `security.signatures."ghcr.io:443/acme/*": write it as "ghcr.io/acme/*"`,
		"ghcr.io:443":                `security.signatures."ghcr.io:443": write it as "ghcr.io"`,
		"example.com/caf\u00e9/*":    `write it as "example.com/caf%C3%A9/*"`,
		"example.com/a%2fb/*":        `security.signatures."example.com/a%2fb/*": no source is matched in this spelling: URL refused: an encoded / (%2F)`,
	} {
		body := "security:\n  signatures:\n    \"" + pattern + "\": {mode: \"off\"}\n"
		_, err := Load(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n  got  %v\n  want %q", pattern, err, want)
		}
	}
	// Canonical patterns load, and match the canonical source.
	cfg, err := Load(writeConfig(t, `security:
  signatures:
    "*": {mode: "off"}
    "Example.com/trusted/*": {identity: x, issuer: y}
    "localhost:5000/acme/*": {identity: x, issuer: y}
    "ghcr.io": {identity: x, issuer: y}
    "example.com/~user/a%3Ab/*": {identity: x, issuer: y}
`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := cfg.SignatureMatcher()
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{"https://EXAMPLE.com.:443/trusted/tool.wasm", "https://example.com/%7euser/a%3ab/tool.wasm"} {
		u, err := download.CanonicalURL(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.MatchURL(download.MatchKey(u)).Mode; got != sigverify.Require {
			t.Errorf("MatchURL(%s) = %s, want require", u, got)
		}
	}
	if got := m.Match("localhost:5000/acme/tool:1").Mode; got != sigverify.Require {
		t.Errorf("Match(localhost:5000/acme/tool:1) = %s, want require", got)
	}
}
