package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/termsafe"
)

func newSyncCmd(g *globalFlags) *cobra.Command {
	var acceptCapabilities, acceptFindings bool
	cmd := &cobra.Command{
		Use:   "sync [MODULE...]",
		Short: "Fetch exactly the modules config.yaml locks (tools.sources and tools.pins)",
		Long: `Make the tools dir hold what config.yaml locks, as on a new machine: each module with a
source (tools.sources.<module>: {ref, digest}) whose file is missing or differs from its
pin is fetched by the locked digest (never by its tag), checked against the signature
policy and against its pin (tools.pins.<module>), and written only if both pass. A
module already matching its pin is left alone. Config is never changed; nothing asks.

Replacing a module file that is there (the lockfile moved on: a teammate's update, a
pull request whose new pin and digest are only hex to a reviewer) is an update of this
machine's module: sync shows how the locked version differs from it, as ` + "`warden update`" + `
does, and refuses one whose tools request more, or a tool it adds that config already
grants something, unless --accept-capabilities is given.

The locked version's descriptors are checked as at install (security.descriptor_checks):
they must be the ones tools.descriptors locks, and their findings are shown; under
refuse a finding refuses the module, under confirm a module with findings and no
descriptor lock needs --accept-findings.

It exits non-zero if any module could not be made to match, including a pinned module
whose file is missing and which has no source to fetch it from.`,
		Example: `  warden sync
  warden sync fetch echo`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := g.requireConfig(); err != nil {
				return err
			}
			a, _, err := g.start(ctx)
			if err != nil {
				return err
			}
			defer a.Close(ctx)
			results := a.Installer().Sync(ctx, args, install.SyncOptions{AcceptCapabilities: acceptCapabilities, AcceptFindings: acceptFindings})
			failed := printSync(cmd.OutOrStdout(), results)
			if len(results) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "nothing to sync: %s has no tools.sources\n", termsafe.Line(a.Config().File))
			}
			if failed > 0 {
				return fmt.Errorf("sync: %d of %d modules failed; nothing was written for them", failed, len(results))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&acceptFindings, "accept-findings", false,
		"also write a module whose descriptors have findings security.descriptor_checks asks to confirm and whose descriptors config.yaml does not lock")
	cmd.Flags().BoolVar(&acceptCapabilities, "accept-capabilities", false,
		"also replace an installed module by a locked version that requests more, or whose added tool config already grants something")
	return cmd
}

func printSync(w io.Writer, results []install.SyncResult) (failed int) {
	for _, r := range results {
		name := termsafe.Line(r.Module)
		switch r.State {
		case install.SyncUpToDate:
			fmt.Fprintf(w, "%s: up to date\n", name)
		case install.SyncFetched:
			fmt.Fprintf(w, "%s: fetched %s at %s\n", name, termsafe.Line(r.Source.Ref), r.Source.Digest)
			if r.Signature != nil {
				fmt.Fprintf(w, "  signature %s\n", termsafe.Bound(r.Signature.String(), termsafe.MaxText, false))
			}
			if len(r.Changes) > 0 {
				printChanges(w, r.Module, r.Changes)
			}
			printFindings(w, "  ", r.Findings)
		case install.SyncGrown:
			failed++
			fmt.Fprintf(w, "%s: NOT SYNCED: %s at %s would replace the installed file with a version that gets more\n",
				name, termsafe.Line(r.Source.Ref), r.Source.Digest)
			printChanges(w, r.Module, r.Changes)
			fmt.Fprintf(w, "  %s; nothing written: pass --accept-capabilities to sync it\n", growth(r.Module, r.Changes))
		default:
			failed++
			fmt.Fprintf(w, "%s: FAILED: %s\n", name, indentMessage(r.Err.Error()))
			printFindings(w, "  ", r.Findings)
		}
	}
	return failed
}

// indentMessage escapes a multi-line error and indents its continuation
// lines under the line that names the module.
func indentMessage(s string) string {
	return strings.ReplaceAll(termsafe.Text(s), "\n", "\n  ")
}
