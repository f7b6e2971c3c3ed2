package install

import (
	"context"
	"errors"
	"fmt"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/download"
	"github.com/warden-run/warden/internal/oci"
	"github.com/warden-run/warden/internal/sigverify"
	"github.com/warden-run/warden/internal/termsafe"
)

// fetchURL downloads an https:// module. Its digest is the file's sha256,
// and its signature is the Sigstore bundle published beside it
// (TOOL.wasm.sigstore.json or TOOL.wasm.bundle, what `cosign sign-blob
// --bundle` writes): a signature over the file itself.
//
// A redirect within the URL's host is followed only to a path the signature
// policy matches with the same pattern as the URL: the policy that judges
// the module is the one that names where it was served from, not one a
// redirect (an open redirect under a trusted prefix) borrowed.
func (inst *Installer) fetchURL(ctx context.Context, cfg *config.Config, m *sigverify.Matcher, f *Fetched, _ FetchOptions) (func(context.Context) (*oci.Found, error), error) {
	matched := m.MatchURL(sourceKey(f.Ref)).Pattern
	dopts := download.Options{
		Dir:                f.dir,
		MaxBytes:           int64(cfg.Tools.Fetch.MaxSize),
		Timeout:            cfg.Tools.Fetch.Timeout,
		AllowRedirectHosts: cfg.Tools.Fetch.RedirectHosts,
		SameHostRedirect: func(to string) error {
			if p := m.MatchURL(sourceKey(to)).Pattern; p != matched {
				return fmt.Errorf("security.signatures matches the target with %s, not %s as the URL: the module would be judged "+
					"by a policy that does not name where it came from; install from the target's URL instead", patternName(p), patternName(matched))
			}
			return nil
		},
	}
	file, err := download.Get(ctx, f.Ref, dopts)
	if err != nil {
		return nil, err
	}
	f.Path = file.Path
	f.Digest = "sha256:" + file.SHA256
	f.From = fmt.Sprintf("%s (%d bytes)", download.ShowURL(file.FinalURL), file.Size)
	return func(ctx context.Context) (*oci.Found, error) {
		b, err := download.Bundle(ctx, f.Ref, dopts)
		if errors.Is(err, download.ErrNoBundle) {
			return &oci.Found{}, nil
		}
		if err != nil {
			return nil, err
		}
		return &oci.Found{Bundles: [][]byte{b}, Sources: []string{"beside " + termsafe.Line(f.Ref)}}, nil
	}, nil
}

// patternName names a security.signatures pattern ("" is none) for a message.
func patternName(pattern string) string {
	if pattern == "" {
		return "no pattern (security.signature_mode)"
	}
	return fmt.Sprintf("%q", pattern)
}
