package install

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/tuf"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/boundedfile"
	"github.com/warden-run/warden/internal/download"
	"github.com/warden-run/warden/internal/oci"
	"github.com/warden-run/warden/internal/sigverify"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/internal/userdirs"
)

// ErrSignature marks a module refused by the signature policy; the error
// also wraps the sigverify kind (sigverify.ErrUnsigned, ErrIdentityMismatch…).
var ErrSignature = errors.New("signature policy refused the module")

// IsRemote reports whether ref names a registry or a URL rather than a
// local file.
func IsRemote(ref string) bool {
	l := strings.ToLower(ref[:min(len(ref), len("https://"))])
	return strings.HasPrefix(ref, "oci://") || strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")
}

// Fetched is a module fetched from a registry or a URL that passed the
// signature policy, waiting in a private temp dir to be reviewed. Close
// removes it; nothing of it is in the tools dir.
type Fetched struct {
	// Ref is the reference fetched, in its canonical form
	// (config.CanonicalSourceRef): the one the signature policy matched and
	// tools.sources.<m>.ref records.
	Ref string
	// Digest is what tools.sources.<m>.digest records: the OCI manifest (or
	// index) digest, or the sha256 of a downloaded file.
	Digest string
	// Path is the module file.
	Path string
	// From describes where the bytes came from, for a person.
	From string
	// Signature is what the signature policy decided.
	Signature SignatureCheck

	dir string
}

// Close removes the fetched file.
func (f *Fetched) Close() error { return os.RemoveAll(f.dir) }

// DefaultModuleName is the module name a fetched module installs under when
// none is given: the repository's last path segment (oci://ghcr.io/acme/fetch:1
// gives fetch) or the URL's file name without .wasm.
func (f *Fetched) DefaultModuleName() string { return moduleNameOfRef(f.Ref) }

func moduleNameOfRef(ref string) string {
	s := ref
	if strings.HasPrefix(s, "oci://") {
		s = sigverify.Repository(strings.TrimPrefix(s, "oci://"))
	} else if u, err := url.Parse(s); err == nil {
		s = u.Path
	}
	return strings.TrimSuffix(path.Base(s), ".wasm")
}

// SignatureCheck is what the signature policy decided for a fetch.
type SignatureCheck struct {
	Mode sigverify.Mode
	// Pattern is the security.signatures pattern that applied; "" means
	// none did and security.signature_mode decided.
	Pattern string
	// Verified describes the signature that verified; nil when none did.
	Verified *sigverify.Result
	// Warning says why a module is accepted unverified (mode warn or off).
	Warning string
}

// String says in one line what was checked, for a person.
func (s SignatureCheck) String() string {
	switch {
	case s.Verified != nil && s.Verified.Keyless:
		return fmt.Sprintf("verified: signed by %s (issuer %s), policy %s", termsafe.Line(s.Verified.Identity), termsafe.Line(s.Verified.Issuer), s.policyName())
	case s.Verified != nil:
		return fmt.Sprintf("verified: signed with the public key %s of policy %s", s.Verified.KeyFingerprint, s.policyName())
	}
	return "NOT VERIFIED: " + s.Warning
}

// SignerUnsigned is the signer recorded for a module the signature policy
// let in without a verified signature (mode warn or off).
const SignerUnsigned = "unsigned"

// Signer is who signed the module, as verified, for the install record
// (tools.sources.<m>.signer): "<identity> (issuer <issuer>)" from the
// certificate that verified (keyless), "key sha256:<fingerprint>" of the
// configured key that verified, or SignerUnsigned. It comes only from
// Verified, never from the module, its registry's annotations or the
// bundle's key hint: the record says what warden checked. The
// certificate's values are escaped and bounded as termsafe.Line shows
// them, so the record is one line, valid UTF-8 for config.yaml and within
// its bound (config's maxSignerLen) whatever a certificate holds.
func (s SignatureCheck) Signer() string {
	switch {
	case s.Verified != nil && s.Verified.Keyless:
		return fmt.Sprintf("%s (issuer %s)", termsafe.Line(s.Verified.Identity), termsafe.Line(s.Verified.Issuer))
	case s.Verified != nil:
		return "key " + s.Verified.KeyFingerprint
	}
	return SignerUnsigned
}

func (s SignatureCheck) policyName() string {
	if s.Pattern == "" {
		return "security.signature_mode"
	}
	return fmt.Sprintf("security.signatures.%q", s.Pattern)
}

// FetchOptions adjust Fetch.
type FetchOptions struct {
	// Digest, when set, is the digest the fetch must resolve to (sync):
	// a registry reference is fetched by this digest instead of its tag,
	// and a download whose sha256 differs is refused.
	Digest string
}

// Fetch downloads the module ref names (oci://… or https://…), bounded by
// tools.fetch, into a private temp dir, and checks it against the
// signature policy before anything of the module runs. ref is first made
// canonical (config.CanonicalSourceRef), and that one string is what the
// policy matches, what is fetched and what Fetched.Ref records: a
// https://HOST/trusted/../evil/tool.wasm is /evil/tool.wasm to all three.
// On any refusal nothing is left behind.
func (inst *Installer) Fetch(ctx context.Context, ref string, opts FetchOptions) (_ *Fetched, err error) {
	cfg := inst.config()
	ref, err = config.CanonicalSourceRef(ref)
	if err != nil {
		return nil, err
	}
	matcher, err := cfg.SignatureMatcher()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Tools.Fetch.Timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "warden-fetch-*")
	if err != nil {
		return nil, err
	}
	f := &Fetched{Ref: ref, dir: dir}
	defer func() {
		if err != nil {
			f.Close()
			if ctx.Err() == context.DeadlineExceeded {
				err = fmt.Errorf("%w (timed out after %s: tools.fetch.timeout)", err, cfg.Tools.Fetch.Timeout)
			}
		}
	}()
	var bundles func(context.Context) (*oci.Found, error)
	if strings.HasPrefix(ref, "oci://") {
		bundles, err = inst.fetchOCI(ctx, cfg, f, opts)
	} else {
		bundles, err = inst.fetchURL(ctx, cfg, matcher, f, opts)
	}
	if err != nil {
		return nil, err
	}
	if opts.Digest != "" && f.Digest != opts.Digest {
		return nil, fmt.Errorf("%s resolved to %s, but the lockfile says %s: refused", termsafe.Line(ref), f.Digest, opts.Digest)
	}
	f.Signature, err = inst.checkSignature(ctx, cfg, matcher, ref, f.Digest, bundles)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (inst *Installer) fetchOCI(ctx context.Context, cfg *config.Config, f *Fetched, opts FetchOptions) (func(context.Context) (*oci.Found, error), error) {
	oopts := oci.Options{Dir: f.dir, MaxBytes: int64(cfg.Tools.Fetch.MaxSize)}
	target := f.Ref
	if opts.Digest != "" {
		target = "oci://" + sigverify.Repository(strings.TrimPrefix(f.Ref, "oci://")) + "@" + opts.Digest
	}
	art, err := oci.Fetch(ctx, target, oopts)
	if err != nil {
		return nil, err
	}
	f.Path = art.Path
	f.Digest = sigverify.SignedDigest(art)
	f.From = fmt.Sprintf("%s (%s, %s)", art.Resolved, art.Layout, termsafe.Line(art.LayerMediaType))
	return func(ctx context.Context) (*oci.Found, error) {
		return oci.Bundles(ctx, art.Resolved, f.Digest, oopts)
	}, nil
}

// checkSignature applies the signature policy for ref to digest, with the
// bundles found attached to it.
func (inst *Installer) checkSignature(ctx context.Context, cfg *config.Config, m *sigverify.Matcher, ref, digest string,
	bundles func(context.Context) (*oci.Found, error)) (SignatureCheck, error) {
	// named is the source as a pattern would name it: an OCI repository
	// without its tag, or a URL's host and path as they are.
	source, named, d := sourceKey(ref), "", sigverify.Decision{}
	if strings.HasPrefix(ref, "oci://") {
		named, d = sigverify.Repository(source), m.Match(source)
	} else {
		named, d = source, m.MatchURL(source)
	}
	sc := SignatureCheck{Mode: d.Mode, Pattern: d.Pattern}
	if d.Mode == sigverify.Off {
		sc.Warning = fmt.Sprintf("signatures are off for %s (%s)", termsafe.Line(source), sc.offBy(cfg))
		return sc, nil
	}
	if d.Policy == nil {
		why := fmt.Sprintf("no security.signatures pattern names %s, so nobody is trusted to sign it", termsafe.Line(named))
		if d.Mode == sigverify.Warn {
			sc.Warning = why + " (security.signature_mode: warn)"
			return sc, nil
		}
		return sc, fmt.Errorf("%w: %s, and security.signature_mode is require; to trust its signer add to %s\n"+
			"  security:\n    signatures:\n      %q: {identity: <certificate identity>, issuer: <OIDC issuer>}   # or {key: path/to/cosign.pub}\n"+
			"or, to install it unverified, security.signatures: {%q: {mode: warn}}",
			ErrSignature, why, configName(cfg), named, named)
	}
	fail := func(err error) (SignatureCheck, error) {
		if d.Mode == sigverify.Warn {
			sc.Warning = err.Error() + fmt.Sprintf(" (security.signatures.%q.mode: warn)", d.Pattern)
			return sc, nil
		}
		return sc, fmt.Errorf("%w: %s: %w", ErrSignature, termsafe.Line(ref), err)
	}
	found, err := bundles(ctx)
	if err != nil {
		return sc, err
	}
	if len(found.Bundles) == 0 {
		msg := fmt.Sprintf("no Sigstore bundle found for %s, and policy %s wants one signed by %s", digest, sc.policyName(), d.Policy)
		if len(found.Skipped) > 0 {
			msg += "; found signatures warden cannot verify: " + termsafe.Bound(strings.Join(found.Skipped, "; "), termsafe.MaxText, false) +
				" (sign with cosign --new-bundle-format)"
		}
		return fail(fmt.Errorf("%w: %s", sigverify.ErrUnsigned, msg))
	}
	var tm sigverify.TrustedMaterial
	if d.Policy.Keyless() {
		if tm, err = inst.trustedRoot(cfg); err != nil {
			return sc, err
		}
	}
	var errs []error
	for i, b := range found.Bundles {
		res, err := sigverify.Verify(ctx, b, digest, *d.Policy, tm)
		if err == nil {
			sc.Verified = res
			return sc, nil
		}
		errs = append(errs, fmt.Errorf("bundle from %s: %w", termsafe.Line(found.Sources[i]), err))
	}
	return fail(errors.Join(errs...))
}

func (s SignatureCheck) offBy(cfg *config.Config) string {
	if s.Pattern == "" {
		return "security.signature_mode: off"
	}
	return fmt.Sprintf("security.signatures.%q.mode: off", s.Pattern)
}

func configName(cfg *config.Config) string {
	if cfg.File == "" {
		return "config.yaml"
	}
	return cfg.File
}

// sourceKey is what signature patterns are matched against, for a
// canonical ref: the reference without its scheme, query or tag
// (ghcr.io/acme/tool, example.com/releases/v1/tool.wasm).
func sourceKey(ref string) string {
	if s, ok := strings.CutPrefix(ref, "oci://"); ok {
		return s
	}
	return download.MatchKey(ref)
}

// trustedRoots caches the Sigstore trusted root per process: TUF is asked
// once per warden command, not once per module. key is everything that
// selected the root, so a config reload that changes any of it fetches anew.
type trustedRoots struct {
	mu  sync.Mutex
	key rootKey
	tm  sigverify.TrustedMaterial
}

// rootKey is what selects the trusted root: the trusted_root.json file, or
// the TUF repository and the sha256 of its initial root.json.
type rootKey struct {
	trustedRoot, tufURL, tufRoot string
}

// trustedRoot returns the trusted material for keyless verification: the
// file security.trusted_root names, or else trusted_root.json fetched (and
// cached) through TUF from security.tuf_url (Sigstore's public-good
// repository when empty), trusting security.tuf_root (sigstore-go's
// embedded public-good root when empty).
func (inst *Installer) trustedRoot(cfg *config.Config) (sigverify.TrustedMaterial, error) {
	sec := cfg.Security
	key := rootKey{trustedRoot: sec.TrustedRoot}
	var tufRoot []byte
	if sec.TrustedRoot == "" {
		key.tufURL = sec.TUFURL
		if sec.TUFRoot != "" {
			b, err := boundedfile.Read(sec.TUFRoot, 1<<20)
			if err != nil {
				return nil, fmt.Errorf("security.tuf_root: %w", err)
			}
			tufRoot = b
			key.tufRoot = sha256Hex(b)
		}
	}
	inst.roots.mu.Lock()
	defer inst.roots.mu.Unlock()
	if inst.roots.tm != nil && inst.roots.key == key {
		return inst.roots.tm, nil
	}
	var tm sigverify.TrustedMaterial
	if sec.TrustedRoot != "" {
		t, err := sigverify.LoadTrustedRoot(sec.TrustedRoot)
		if err != nil {
			return nil, fmt.Errorf("security.trusted_root: %w", err)
		}
		tm = t
	} else {
		opts, err := tufOptions(sec.TUFURL, tufRoot)
		if err != nil {
			return nil, fmt.Errorf("%w; set security.trusted_root in %s to verify without TUF", err, configName(cfg))
		}
		t, err := root.FetchTrustedRootWithOptions(opts)
		if err != nil {
			return nil, fmt.Errorf("fetching the Sigstore trusted root (trusted_root.json) through TUF from %s (%s) failed: %w; "+
				"offline, download trusted_root.json (e.g. `cosign trusted-root create`, or from the sigstore/root-signing "+
				"repository for the public-good instance) and set security.trusted_root in %s",
				termsafe.Line(opts.RepositoryBaseURL), tufURLSetting(sec.TUFURL), err, configName(cfg))
		}
		tm = t
	}
	inst.roots.key, inst.roots.tm = key, tm
	return tm, nil
}

// tufOptions are sigstore-go's TUF client options for the repository at
// repoURL (empty: the public-good one) trusting initialRoot (nil: the embedded
// public-good root). The cache is the user cache dir's
// warden/sigstore-tuf/<repository>-<hash of its URL>, so two repositories
// never share cached metadata, even when tuf.URLToPath maps their URLs to
// the same name (http:// and https://, a/b-c and a-b/c).
//
// Without a user cache dir (userdirs.CacheDir: no home anywhere, or a home
// that is "/") it refuses, rather than take sigstore-go's fallback of the
// shared temporary directory, where another user could plant the metadata
// first.
func tufOptions(repoURL string, initialRoot []byte) (*tuf.Options, error) {
	opts := tuf.DefaultOptions()
	if repoURL != "" {
		opts = opts.WithRepositoryBaseURL(repoURL)
	}
	if initialRoot != nil {
		opts = opts.WithRoot(initialRoot)
	}
	cache, err := userdirs.CacheDir()
	if err != nil {
		return nil, fmt.Errorf("TUF metadata cache for Sigstore: %w", err)
	}
	base := filepath.Join(cache, "warden", "sigstore-tuf")
	return opts.WithCachePath(filepath.Join(base, tufCacheDir(opts.RepositoryBaseURL))), nil
}

// tufCacheDir is the cache subdirectory of the TUF repository at repoURL.
func tufCacheDir(repoURL string) string {
	return tuf.URLToPath(repoURL) + "-" + sha256Hex([]byte(repoURL))[:12]
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// tufURLSetting names where the TUF repository URL came from, for errors.
func tufURLSetting(repoURL string) string {
	if repoURL == "" {
		return "Sigstore's public-good repository; security.tuf_url is not set"
	}
	return "security.tuf_url"
}
