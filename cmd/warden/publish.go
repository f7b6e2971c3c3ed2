package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/internal/boundedfile"
	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/oci"
	"github.com/warden-run/warden/internal/sigsign"
	"github.com/warden-run/warden/internal/termsafe"
)

// maxKeyBytes bounds the --sign-key file; a PEM private key is a few KiB.
const maxKeyBytes = 64 << 10

func newPublishCmd(g *globalFlags) *cobra.Command {
	var keyPath string
	cmd := &cobra.Command{
		Use:   "publish FILE.wasm oci://REGISTRY/REPO:TAG",
		Short: "Push a tool module to an OCI registry, optionally signed with a key",
		Long: `Load the module in the sandbox (only _initialize and describe run) to check that
warden can serve it, then push it to the registry in the CNCF Wasm OCI artifact layout
(config application/vnd.wasm.config.v0+json, one application/wasm layer), tagged as TAG.
A file that is not a core WebAssembly module, or that provides no valid tool, is refused
before anything is pushed.

With --sign-key, the pushed manifest is signed offline with that private key (PKCS#8
ECDSA P-256/P-384, ed25519 or RSA, unencrypted) and the Sigstore bundle is attached to it
as an OCI referrer, where ` + "`warden install`" + ` finds it. Keyless signing needs an identity
provider: use cosign for that (the output says how).

Registry credentials come from the Docker config (` + "`docker login`" + `, credential helpers);
loopback registries are spoken to over plain HTTP.`,
		Example: `  warden publish ./echo.wasm oci://ghcr.io/acme/echo:1.0.0
  warden publish --sign-key signing.key ./echo.wasm oci://ghcr.io/acme/echo:1.0.0`,
		Args: cobraArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			file, ref := args[0], strings.TrimPrefix(args[1], "oci://")
			if err := oci.CheckPushRef(ref); err != nil {
				return usageError{fmt.Errorf("publish: %w", err)}
			}
			// The key is read first: a bad key must not leave an unsigned push.
			var key *sigsign.Keypair
			var keyPEM []byte
			if keyPath != "" {
				var err error
				if keyPEM, err = boundedfile.Read(keyPath, maxKeyBytes); err != nil {
					return fmt.Errorf("publish: --sign-key %s: %w", termsafe.Line(keyPath), err)
				}
				if key, err = sigsign.LoadKey(keyPEM); err != nil {
					return fmt.Errorf("publish: --sign-key %s: %w", termsafe.Line(keyPath), err)
				}
			}
			a, _, err := g.start(ctx)
			if err != nil {
				return err
			}
			defer a.Close(ctx)
			in, err := a.Installer().Inspect(ctx, file)
			if err != nil {
				return fmt.Errorf("publish: %w", err)
			}
			opts := oci.Options{}
			pushed, err := oci.PushBytes(ctx, ref, in.Bytes(), opts)
			if err != nil {
				return fmt.Errorf("publish %s: %w", termsafe.Line(file), err)
			}
			out := cmd.OutOrStdout()
			printPushed(out, in, pushed)
			if key == nil {
				printKeylessNote(out, pushed)
				return nil
			}
			bundle, err := sigsign.SignWithKey(ctx, pushed.ManifestBytes, keyPEM)
			if err != nil {
				return fmt.Errorf("publish: pushed %s, but signing it failed: %w", pushed.Resolved, err)
			}
			referrer, err := oci.AttachBundle(ctx, ref, pushed.Manifest, bundle, opts)
			if err != nil {
				return fmt.Errorf("publish: pushed %s, but attaching its signature failed (run publish again to retry): %w", pushed.Resolved, err)
			}
			printSigned(out, pushed, key, keyPath, referrer.Digest.String())
			return nil
		},
	}
	cmd.Flags().StringVar(&keyPath, "sign-key", "", "sign the pushed manifest with this PEM private key (unencrypted PKCS#8, EC or RSA)")
	return cmd
}

// printPushed says what was pushed and how to install it. The tool names
// come from the module: escaped.
func printPushed(w io.Writer, in *install.Inspection, p *oci.Pushed) {
	fmt.Fprintf(w, "Pushed   %s\n", termsafe.Line(p.Ref))
	fmt.Fprintf(w, "Digest   %s\n", p.Digest)
	fmt.Fprintf(w, "Module   %s (%d bytes, sha256 %s)\n", termsafe.Line(in.Source), in.Size, in.SHA256)
	var tools []string
	for _, d := range in.Tools {
		s := termsafe.Line(d.Name)
		if d.Version != "" {
			s += " (version " + termsafe.Line(d.Version) + ")"
		}
		tools = append(tools, s)
	}
	fmt.Fprintf(w, "Tools    %s\n", termsafe.Bound(strings.Join(tools, ", "), termsafe.MaxText, false))
	if n := len(in.Rejected); n > 0 {
		fmt.Fprintf(w, "         (%d tool(s) of the module are invalid and will not be served; `warden install` shows why)\n", n)
	}
	fmt.Fprintf(w, "\nInstall it, pinned to this digest:\n  warden install oci://%s\n", termsafe.Line(p.Resolved))
}

func repoOf(p *oci.Pushed) string {
	repo, _, _ := strings.Cut(p.Resolved, "@")
	return repo
}

func printKeylessNote(w io.Writer, p *oci.Pushed) {
	fmt.Fprintf(w, `
Not signed. To sign keylessly (an OIDC identity, e.g. a CI workflow's, through Sigstore),
sign the digest with cosign, which attaches a Sigstore bundle warden reads:
  cosign sign --new-bundle-format --registry-referrers-mode=oci-1-1 %s
(cosign 3 uses the bundle format and referrers by default.) Or sign with a key:
  warden publish --sign-key signing.key …
`, termsafe.Line(p.Resolved))
}

func printSigned(w io.Writer, p *oci.Pushed, key *sigsign.Keypair, keyPath, referrer string) {
	fmt.Fprintf(w, "\nSigned   with %s (key hint %s); bundle attached as referrer %s\n", termsafe.Line(keyPath), key.Hint(), termsafe.Line(referrer))
	fmt.Fprintf(w, "\nUsers verify it with the public key:\n%s", key.PublicKeyPEM())
	fmt.Fprintf(w, `
Save it (e.g. as keys/%[1]s.pub) and add to config.yaml:
  security:
    signatures:
      %[2]q:
        key: keys/%[1]s.pub
`, pubName(p), termsafe.Line(repoOf(p)))
}

// pubName suggests a file name for the public key: the repository's last
// element.
func pubName(p *oci.Pushed) string {
	repo := repoOf(p)
	name := repo[strings.LastIndexByte(repo, '/')+1:]
	if name == "" {
		return "publisher"
	}
	return termsafe.Line(name)
}
