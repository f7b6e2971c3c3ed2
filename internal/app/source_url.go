package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/download"
	"github.com/warden-run/warden/internal/oci"
	"github.com/warden-run/warden/internal/termsafe"
)

// fetchURL downloads an https:// module. Its digest is the file's sha256,
// and its signature is the Sigstore bundle published beside it
// (TOOL.wasm.sigstore.json or TOOL.wasm.bundle, what `cosign sign-blob
// --bundle` writes): a signature over the file itself.
func (a *App) fetchURL(ctx context.Context, cfg *config.Config, f *Fetched, _ FetchOptions) (func(context.Context) (*oci.Found, error), error) {
	dopts := download.Options{
		Dir:                f.dir,
		MaxBytes:           int64(cfg.Tools.Fetch.MaxSize),
		Timeout:            cfg.Tools.Fetch.Timeout,
		AllowRedirectHosts: cfg.Tools.Fetch.RedirectHosts,
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
