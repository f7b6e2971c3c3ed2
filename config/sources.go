package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/warden-run/warden/internal/boundedfile"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/descriptorcheck"
	"github.com/warden-run/warden/internal/download"
	"github.com/warden-run/warden/internal/oci"
	"github.com/warden-run/warden/internal/sigverify"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/tool"
)

// Source is where an installed module came from (tools.sources.<module>):
// the reference the user installed (oci://REGISTRY/REPO:TAG or @sha256:…,
// or an https:// URL) and the digest it resolved to then (the OCI
// manifest digest, or the sha256 of the downloaded file). With the module's
// pin, it makes config.yaml a lockfile: `warden sync` fetches exactly this
// digest, and `warden update` asks Ref what it points to now.
type Source struct {
	Ref    string `mapstructure:"ref"`
	Digest string `mapstructure:"digest"`
	// Name is the module's name as installed (its file is Name.wasm) when
	// it differs from the tools.sources key, which config reads in lower
	// case: `warden install --name Tool` records name: Tool, so that sync
	// writes Tool.wasm, the module the pin and the grants' module fields
	// name, not a second tool.wasm.
	Name string `mapstructure:"name"`
	// Signer is who signed the module, as the signature check that
	// accepted it at install or update verified it (install.SignatureCheck.Signer):
	// "<identity> (issuer <issuer>)" for a keyless signature,
	// "key sha256:<fingerprint>" for a key, "unsigned" when the policy
	// let it in without a verified signature. "" is a record written before
	// warden recorded signers. It is a record, not a proof: config.yaml is
	// not signed, so sync re-verifies and refuses a signer that differs.
	Signer string `mapstructure:"signer"`
}

// SignerNotRecorded is what a tools.sources entry without a signer (written
// before warden recorded signers) shows in its place.
const SignerNotRecorded = "not recorded (installed before warden recorded signers)"

// SignerShown is src.Signer, or SignerNotRecorded for a record without one.
func (src Source) SignerShown() string {
	if src.Signer == "" {
		return SignerNotRecorded
	}
	return src.Signer
}

// Module is the module name src installs as, given its tools.sources key.
func (src Source) Module(key string) string {
	if src.Name != "" {
		return src.Name
	}
	return key
}

// Fetch bounds every download from a registry or a URL (tools.fetch).
type Fetch struct {
	// MaxSize bounds the module and every blob downloaded for it.
	MaxSize ByteSize `mapstructure:"max_size"`
	// Timeout bounds one whole fetch: resolving, downloading, signatures.
	Timeout time.Duration `mapstructure:"timeout"`
	// RedirectHosts are the hosts an https:// download may be redirected
	// to (e.g. objects.githubusercontent.com for GitHub release assets).
	RedirectHosts []string `mapstructure:"redirect_hosts"`
}

// SignaturePolicy is whom the modules of a source pattern must be signed by
// (security.signatures.<pattern>): keyless, an identity (exact or a
// whole-string regexp) and an OIDC issuer (exact or regexp); or a public
// key file. Mode overrides security.signature_mode for the pattern.
type SignaturePolicy struct {
	Mode           string `mapstructure:"mode"`
	Identity       string `mapstructure:"identity"`
	IdentityRegexp string `mapstructure:"identity_regexp"`
	Issuer         string `mapstructure:"issuer"`
	IssuerRegexp   string `mapstructure:"issuer_regexp"`
	// Key is a PEM public key file (cosign.pub), relative to the config.
	Key string `mapstructure:"key"`
}

// maxSignerLen bounds tools.sources.<m>.signer: install writes an
// identity and an issuer escaped and cut by termsafe.Line (512 bytes of
// the original each, an escape at most 10 bytes), or a key fingerprint.
const maxSignerLen = 16 << 10

var sourceDigestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// CheckSourceRef reports whether ref is a reference warden installs from:
// oci://REGISTRY/REPO with a tag or a digest, or an https:// URL (http://
// only for a loopback host), with no credentials. It does not touch the
// network.
func CheckSourceRef(ref string) error {
	_, err := CanonicalSourceRef(ref)
	return err
}

// CanonicalSourceRef returns the one form of ref that warden matches
// against security.signatures, fetches, records in tools.sources and shows:
// for a URL, download.CanonicalURL (dot segments resolved, escapes
// normalised, host in lower case without its trailing dot or default
// port); for oci://, oci.CanonicalRef (the registry host in lower case
// without its trailing dot or port 443). A reference with credentials is
// refused, and no error shows them.
func CanonicalSourceRef(ref string) (string, error) {
	switch {
	case strings.HasPrefix(ref, "oci://"):
		return oci.CanonicalRef(ref)
	case hasPrefixFold(ref, "https://"), hasPrefixFold(ref, "http://"):
		c, err := download.CanonicalURL(ref)
		if err != nil {
			return "", fmt.Errorf("%s: %w", download.ShowURL(ref), err)
		}
		return c, nil
	}
	return "", fmt.Errorf("%s is neither oci://REGISTRY/REPO:TAG nor an https:// URL", showRef(ref))
}

// showRef is a reference of an unknown kind as an error may show it.
func showRef(ref string) string {
	if strings.Contains(ref, "@") && !strings.HasPrefix(ref, "oci://") {
		return download.ShowURL(ref)
	}
	return strconv.Quote(termsafe.Line(ref))
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func (c *Config) validateSources(fail func(key, format string, args ...any)) {
	for _, name := range sortedKeys(c.Tools.Sources) {
		s := c.Tools.Sources[name]
		key := "tools.sources." + name
		if !tool.ValidName(name) {
			fail(key, "%q is not a module name (%s)", name, tool.NameRule)
		}
		if err := CheckSourceRef(s.Ref); err != nil {
			fail(key+".ref", "%v", err)
		}
		if s.Name != "" && (!strings.EqualFold(s.Name, name) || !tool.ValidName(s.Name)) {
			fail(key+".name", "%q is not the module %s in other case (name records how an installed module's file name is spelled)", s.Name, name)
		}
		if len(s.Signer) > maxSignerLen {
			fail(key+".signer", "is %d bytes, more than %d: a signer record is an identity and issuer or a key fingerprint", len(s.Signer), maxSignerLen)
		}
		if !sourceDigestPattern.MatchString(s.Digest) {
			fail(key+".digest", "must be sha256:<64 lowercase hex>, got %q", s.Digest)
		}
		if _, ok := c.Tools.Pins[name]; !ok {
			fail(key, "has no tools.pins.%s: a source without the module's sha256 is no lock; install it again", name)
		}
	}
	if _, err := descriptorcheck.ParsePolicy(c.Security.DescriptorChecks); err != nil {
		fail("security.descriptor_checks", "%v", err)
	}
	for _, name := range sortedKeys(c.Tools.Descriptors) {
		if !tool.ValidName(name) {
			fail("tools.descriptors."+name, "%q is not a module name (%s)", name, tool.NameRule)
		}
		for _, t := range sortedKeys(c.Tools.Descriptors[name]) {
			if !sourceDigestPattern.MatchString(c.Tools.Descriptors[name][t]) {
				fail("tools.descriptors."+name+"."+t, "must be sha256:<64 lowercase hex>, got %q", c.Tools.Descriptors[name][t])
			}
		}
	}
	if c.Tools.Fetch.MaxSize < 1<<10 || c.Tools.Fetch.MaxSize > 1<<30 {
		fail("tools.fetch.max_size", "must be between 1KiB and 1GiB, got %s", c.Tools.Fetch.MaxSize)
	}
	if c.Tools.Fetch.Timeout <= 0 {
		fail("tools.fetch.timeout", "must be positive, got %s", c.Tools.Fetch.Timeout)
	}
	for _, h := range c.Tools.Fetch.RedirectHosts {
		switch {
		case strings.Contains(h, "@"):
			// Not as written: user:password@ is how credentials are written.
			fail("tools.fetch.redirect_hosts", "%q (shown without what precedes the @) is not a host name (HOST or HOST:PORT): no user or password", download.ShowHost(h))
		case h == "" || strings.ContainsAny(h, "/ \t\r\n*"):
			fail("tools.fetch.redirect_hosts", "%q is not a host name (HOST or HOST:PORT)", h)
		}
	}
	if _, err := sigverify.ParseMode(strings.ToLower(c.Security.SignatureMode)); err != nil {
		fail("security.signature_mode", "must be require, warn or off, got %q", c.Security.SignatureMode)
	}
	if _, err := sigverify.NewMatcher(c.signatureRules(nil), sigverify.Require); err != nil {
		fail("security.signatures", "%v", err)
	}
	for _, pattern := range sortedKeys(c.Security.Signatures) {
		p := c.Security.Signatures[pattern]
		key := fmt.Sprintf("security.signatures.%q", pattern)
		written := pattern
		if w, ok := c.signaturePatterns[pattern]; ok {
			written = w
		}
		if err := checkPatternCanonical(written); err != nil {
			fail(fmt.Sprintf("security.signatures.%q", written), "%v", err)
		}
		mode, err := sigverify.ParseMode(strings.ToLower(p.Mode))
		if err != nil {
			fail(key+".mode", "must be require, warn or off, got %q", p.Mode)
		}
		for _, f := range []struct{ field, re string }{{"identity_regexp", p.IdentityRegexp}, {"issuer_regexp", p.IssuerRegexp}} {
			if _, err := regexp.Compile(f.re); err != nil {
				fail(key+"."+f.field, "%v", err)
			}
		}
		keyless := p.Identity != "" || p.IdentityRegexp != "" || p.Issuer != "" || p.IssuerRegexp != ""
		switch {
		case mode == sigverify.Off:
		case p.Key != "" && keyless:
			fail(key, "has both key and identity/issuer: a policy is either a public key or a keyless identity")
		case p.Key != "":
		case (p.Identity == "") == (p.IdentityRegexp == ""):
			fail(key, "needs exactly one of identity or identity_regexp (or key: a public key file)")
		case (p.Issuer == "") == (p.IssuerRegexp == ""):
			fail(key, "needs exactly one of issuer or issuer_regexp (e.g. issuer: https://token.actions.githubusercontent.com)")
		}
	}
	// security.trusted_root, security.tuf_root and the key files are read
	// when a signature is checked, not here: a missing trust file must not
	// stop `warden serve`, which never needs it, and the error then names
	// the key.
	if c.Security.TUFURL != "" {
		// https://HOST[/PATH], or http:// for a loopback host only (the
		// rule of internal/download), with no user:password, query or #fragment.
		if err := checkHTTPSURL(c.Security.TUFURL, false); err != nil {
			fail("security.tuf_url", "%v", err)
		}
	}
	if c.Security.TUFRoot != "" {
		if c.Security.TUFURL == "" {
			fail("security.tuf_root", "is the root.json of the repository security.tuf_url names, and tuf_url is not set: "+
				"set both (a mirror or a private Sigstore deployment), or neither (Sigstore's public-good repository)")
		}
	}
}

// checkPatternCanonical refuses a security.signatures pattern (as
// written) that is not in the canonical form sources are matched in
// (download.CanonicalURL, download.MatchKey, oci.CanonicalRef): such a
// pattern loads but never matches, and a require rule in it would silently
// give way to a weaker one. The error names the spelling to write instead.
// The host's case is not part of the form (the matcher ignores it). A
// pattern sigverify refuses (an @, a wildcard inside) is reported there,
// and not here, where it would be quoted.
func checkPatternCanonical(p string) error {
	if _, err := sigverify.NewMatcher([]sigverify.Rule{{Pattern: p}}, sigverify.Require); err != nil || p == "*" {
		return nil
	}
	base, wild := strings.CutSuffix(p, "/*")
	u, err := download.CanonicalURL("https://" + base)
	if err != nil {
		return fmt.Errorf("no source is matched in this spelling: %w", err)
	}
	canonical := download.MatchKey(u)
	if !strings.Contains(base, "/") {
		canonical = strings.TrimSuffix(canonical, "/") // a registry alone: ghcr.io
	}
	if wild {
		canonical += "/*"
	}
	asMatched := strings.ToLower(p)
	if host, path, ok := strings.Cut(p, "/"); ok {
		asMatched = strings.ToLower(host) + "/" + path
	}
	if canonical != asMatched {
		return fmt.Errorf("write it as %q (the canonical form sources are matched in: host without a trailing dot or port 443, "+
			"escapes of unreserved characters decoded and the others in upper case, no . or .. segments); as written it never matches", canonical)
	}
	return nil
}

// signaturePatternsAsWritten maps each security.signatures pattern of the
// config file data, lower-cased (the key viper gives), to the pattern as
// written. A URL's path is case-sensitive, so sigverify.MatchURL
// compares it with the pattern as written: a policy for
// example.com/Trusted/* names /Trusted/, and neither /trusted/ nor
// /TRUSTED/, which a server may serve to someone else. nil when the file
// does not parse (Load reports that) or sets none.
func signaturePatternsAsWritten(data []byte) map[string]string {
	var doc struct {
		Security struct {
			Signatures map[string]yaml.Node `yaml:"signatures"`
		} `yaml:"security"`
	}
	if yaml.Unmarshal(data, &doc) != nil {
		return nil
	}
	out := map[string]string{}
	for p := range doc.Security.Signatures {
		out[configkey.Fold(p)] = p
	}
	return out
}

// signatureRules turns security.signatures into matcher rules; keys holds
// each pattern's public key bytes (nil: none read, for validation). Each
// rule's pattern is as the file writes it, when known.
func (c *Config) signatureRules(keys map[string][]byte) []sigverify.Rule {
	var rules []sigverify.Rule
	for _, pattern := range sortedKeys(c.Security.Signatures) {
		p := c.Security.Signatures[pattern]
		written := pattern
		if w, ok := c.signaturePatterns[pattern]; ok {
			written = w
		}
		rules = append(rules, sigverify.Rule{
			Pattern: written,
			Mode:    sigverify.Mode(strings.ToLower(p.Mode)),
			Policy: sigverify.Policy{
				Identity: p.Identity, IdentityRegexp: p.IdentityRegexp,
				Issuer: p.Issuer, IssuerRegexp: p.IssuerRegexp,
				PublicKey: keys[pattern],
			},
		})
	}
	return rules
}

// maxKeyFile bounds a public key file; a PEM key is well under 16 KiB.
const maxKeyFile = 64 << 10

// SignatureMatcher returns the signature policy of every source, reading
// the public key files the policies name.
func (c *Config) SignatureMatcher() (*sigverify.Matcher, error) {
	keys := map[string][]byte{}
	for _, pattern := range sortedKeys(c.Security.Signatures) {
		p := c.Security.Signatures[pattern]
		if p.Key == "" {
			continue
		}
		b, err := boundedfile.Read(p.Key, maxKeyFile)
		if err != nil {
			return nil, fmt.Errorf("security.signatures.%q.key: %w", pattern, err)
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("security.signatures.%q.key: %s is empty", pattern, p.Key)
		}
		keys[pattern] = b
	}
	return sigverify.NewMatcher(c.signatureRules(keys), sigverify.Mode(strings.ToLower(c.Security.SignatureMode)))
}

// SetSource records src as where module came from (tools.sources.<module>).
func (d *Document) SetSource(module string, src Source) error {
	if !tool.ValidName(module) {
		return fmt.Errorf("tools.sources: %q is not a module name (%s)", module, tool.NameRule)
	}
	if !sourceDigestPattern.MatchString(src.Digest) {
		return fmt.Errorf("tools.sources.%s.digest: %q is not sha256:<64 lowercase hex>", module, src.Digest)
	}
	ref, err := CanonicalSourceRef(src.Ref)
	if err != nil {
		return fmt.Errorf("tools.sources.%s.ref: %w", module, err)
	}
	if len(src.Signer) > maxSignerLen {
		return fmt.Errorf("tools.sources.%s.signer: %d bytes, more than %d", module, len(src.Signer), maxSignerLen)
	}
	m := EmptyMap()
	m.Content = append(m.Content, Str("ref"), Str(ref), Str("digest"), Str(src.Digest))
	if key := configkey.Fold(module); module != key {
		m.Content = append(m.Content, Str("name"), Str(module))
	}
	if src.Signer != "" {
		m.Content = append(m.Content, Str("signer"), Str(src.Signer))
	}
	return d.Set(m, "tools", "sources", configkey.Fold(module))
}

// LockDescriptors records digests (tool name to descriptorcheck.Digest)
// as tools.descriptors.<module>, replacing what was locked for module.
func (d *Document) LockDescriptors(module string, digests map[string]string) error {
	if !tool.ValidName(module) {
		return fmt.Errorf("tools.descriptors: %q is not a module name (%s)", module, tool.NameRule)
	}
	m := EmptyMap()
	for _, name := range sortedKeys(digests) {
		if !sourceDigestPattern.MatchString(digests[name]) {
			return fmt.Errorf("tools.descriptors.%s.%s: %q is not sha256:<64 lowercase hex>", module, name, digests[name])
		}
		m.Content = append(m.Content, Str(configkey.Fold(name)), Str(digests[name]))
	}
	return d.Set(m, "tools", "descriptors", configkey.Fold(module))
}

// LockedDescriptors returns tools.descriptors.<module> (tool names folded),
// nil when module has no lock.
func (c *Config) LockedDescriptors(module string) map[string]string {
	return c.Tools.Descriptors[configkey.Fold(module)]
}

// DeleteSource removes the source of module: a module installed from a
// local file has none.
func (d *Document) DeleteSource(module string) error {
	return d.Delete("tools", "sources", configkey.Fold(module))
}
