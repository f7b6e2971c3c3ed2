package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/internal/capset"
	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/termsafe"
)

func newUpdateCmd(g *globalFlags) *cobra.Command {
	var yes, acceptCapabilities, acceptFindings, acceptDescriptions bool
	cmd := &cobra.Command{
		Use:   "update [MODULE...]",
		Short: "Fetch what each module's source ref points to now, show what changes, and install it",
		Long: `For each module installed from a registry or a URL (tools.sources), or only those named,
fetch what its ref points to now. If it is still the locked digest, nothing changes.
Otherwise the new module is checked against the signature policy (a module whose
digest or signature fails is never installed), loaded in the sandbox, and compared with
the installed one: tools added and removed, descriptor fields changed, and capabilities
requested beyond what the previous version requested, in every dimension (fs paths,
net hosts, env keys, LSP languages, memory level and topics, client features). A host
named beside "*" that "*" never reached (loopback, private, link-local, localhost) is
more, and so is dropping a memory topic limit (no topics means the whole store).
Once approved it replaces the module, and its new pin and digest are written to
config.yaml; a running ` + "`warden serve`" + ` picks it up.

Approval: on a terminal you are asked per module. --yes approves updates whose tools
request nothing new; an update that requests more capabilities needs a person on a
terminal, or --accept-capabilities as well. Requesting is not granting: grants stay
as config.yaml says. An update that changes what a tool tells the model (its title,
description, schemas or annotations; shown as a word diff, [-old-]{+new+}) is a
possible rug pull: --yes alone refuses it, and --accept-descriptions applies it after
you read the diff. A module whose bytes did not change but whose tools describe
themselves otherwise than the descriptors locked at review (tools.descriptors) is
shown the same way. Findings of the tool-poisoning checks under
security.descriptor_checks confirm need --accept-findings beside --yes.`,
		Example: `  warden update
  warden update fetch --yes`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := g.requireConfig(); err != nil {
				return err
			}
			a, err := g.startWithInstalled(cmd)
			if err != nil {
				return err
			}
			defer a.Close(ctx)
			modules := args
			if len(modules) == 0 {
				for name := range a.Config().Tools.Sources {
					modules = append(modules, name)
				}
				slices.Sort(modules)
				if len(modules) == 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "nothing to update: %s has no tools.sources\n", termsafe.Line(a.Config().File))
					return nil
				}
			}
			out := cmd.OutOrStdout()
			interactive := isTerminal(cmd.InOrStdin())
			var failed []string
			for _, m := range modules {
				if err := updateOne(cmd, a.Installer(), m, out, interactive, updateApproval{yes, acceptCapabilities, acceptFindings, acceptDescriptions}); err != nil {
					fmt.Fprintf(out, "%s: NOT UPDATED: %s\n", termsafe.Line(m), indentMessage(err.Error()))
					failed = append(failed, m)
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("update: %d of %d modules not updated (%s)", len(failed), len(modules), termsafe.Join(failed, ", "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "apply updates that request no new capabilities and change no tool's description or schemas without asking")
	cmd.Flags().BoolVar(&acceptCapabilities, "accept-capabilities", false, "with --yes, also apply updates whose tools request more capabilities")
	cmd.Flags().BoolVar(&acceptFindings, "accept-findings", false, "with --yes, also apply updates whose descriptors have findings that security.descriptor_checks asks to confirm")
	cmd.Flags().BoolVar(&acceptDescriptions, "accept-descriptions", false, "with --yes, also apply updates that change what a tool tells the model (description, title, schemas, annotations)")
	return cmd
}

// updateApproval is what the person passed to approve updates unattended.
type updateApproval struct {
	yes, acceptCapabilities, acceptFindings, acceptDescriptions bool
}

func updateOne(cmd *cobra.Command, inst *install.Installer, module string, out io.Writer, interactive bool, ok updateApproval) error {
	yes, acceptCapabilities := ok.yes, ok.acceptCapabilities
	ctx := cmd.Context()
	u, err := inst.ReviewUpdate(ctx, module)
	if err != nil {
		return err
	}
	name := termsafe.Line(u.Module)
	if u.UpToDate {
		fmt.Fprintf(out, "%s: up to date (%s at %s)\n", name, termsafe.Line(u.Current.Ref), u.Current.Digest)
		return nil
	}
	defer u.Review.Fetched.Close()
	if len(u.Drift) > 0 {
		fmt.Fprintf(out, "%s: %s still resolves to %s, but its tools describe themselves otherwise than reviewed:\n", name, termsafe.Line(u.Current.Ref), u.Current.Digest)
		for _, d := range u.Drift {
			fmt.Fprintf(out, "  tool %s: locked %s, now %s\n", termsafe.Line(d.Tool), dash(d.Locked), d.Found)
		}
		fmt.Fprintln(out)
	} else {
		fmt.Fprintf(out, "%s: %s moved from %s to %s\n\n", name, termsafe.Line(u.Current.Ref), u.Current.Digest, u.Review.Origin.Digest)
	}
	// A record from before signers were recorded names nobody to compare.
	if was, now := u.Current.Signer, u.Review.Origin.Signer; was != "" && was != now {
		fmt.Fprintf(out, "%s: SIGNER CHANGED from %s to %s\n\n", name, termsafe.Line(was), termsafe.Line(now))
	}
	printReview(out, u.Review)
	fmt.Fprintln(out)
	printChanges(out, u.Review.Module, u.Changes)
	// What --yes alone does not approve, checked before asking anything:
	// words that changed (a rug pull) and findings the policy wants
	// confirmed each need their own flag, as growth does.
	if yes && !interactive {
		if u.Reworded && !ok.acceptDescriptions {
			return fmt.Errorf("its tools change what they tell the model (%s), which --yes alone does not apply: "+
				"read the word diff above, then run `warden update %s --yes --accept-descriptions`, or decide on a terminal; nothing changed", reworded(u), name)
		}
		if u.Review.NeedsFindingsApproval() && !ok.acceptFindings {
			return fmt.Errorf("%s, which --yes alone does not approve; read them above, then pass --accept-findings too, or decide on a terminal; nothing changed", findingsSummary(u.Review))
		}
	}
	if yes && interactive && (u.Reworded && !ok.acceptDescriptions || u.Review.NeedsFindingsApproval() && !ok.acceptFindings) {
		fmt.Fprintf(out, "\nThe update changes what its tools tell the model, or has FINDINGS (marked !). Update %s anyway? [y/N] ", name)
		if !confirmed(out, cmd.InOrStdin()) {
			return fmt.Errorf("declined; nothing changed")
		}
	}
	switch {
	case interactive && !yes:
		question := "Update %s? [y/N] "
		if u.Grown {
			question = "The update requests MORE capabilities (marked +). Update %s anyway? [y/N] "
		}
		fmt.Fprintf(out, "\n"+question, name)
		if !confirmed(out, cmd.InOrStdin()) {
			return fmt.Errorf("declined; nothing changed")
		}
	case !yes:
		return usagef("not updated: confirm on a terminal, or pass --yes")
	case u.Grown && !acceptCapabilities && !interactive:
		return fmt.Errorf("its tools request more capabilities than the installed version (or a tool it adds is granted some already), which --yes alone does not approve: %s; "+
			"run it on a terminal to decide, or pass --accept-capabilities too; nothing changed", growth(u.Review.Module, u.Changes))
	case u.Grown && !acceptCapabilities:
		fmt.Fprintf(out, "\nThe update requests MORE capabilities (marked +). Update %s anyway? [y/N] ", name)
		if !confirmed(out, cmd.InOrStdin()) {
			return fmt.Errorf("declined; nothing changed")
		}
	}
	if err := inst.Install(ctx, u.Review); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: updated to %s (sha256 %s pinned; a running warden serve reloads it)\n", name, u.Review.Origin.Digest, u.Review.SHA256[:12])
	return nil
}

// printChanges shows how the update differs from the installed version:
// + marks what a tool requests now that its previous version's requests
// do not cover (capset.Missing), and what config already grants a tool the
// update adds; - what a tool no longer requests.
func printChanges(w io.Writer, module string, changes []install.ToolChange) {
	if len(changes) == 0 {
		fmt.Fprintln(w, "Changes  none in the tools' descriptors (the code changed)")
		return
	}
	fmt.Fprintln(w, "Changes")
	for _, c := range changes {
		line := fmt.Sprintf("  %s %s", c.Kind, termsafe.Line(c.Name))
		if len(c.Fields) > 0 {
			line += " (" + strings.Join(c.Fields, ", ") + ")"
		}
		fmt.Fprintln(w, line)
		for _, r := range capset.Describe(c.Grown) {
			fmt.Fprintf(w, "    + requests %s\n", termsafe.Line(r))
		}
		for _, g := range capset.Describe(c.Granted) {
			fmt.Fprintf(w, "    + is granted %s by %s\n", termsafe.Line(g), grantEntry(c, module))
		}
		if len(c.Config) > 0 {
			fmt.Fprintf(w, "    + reads config %s of %s\n", termsafe.Join(c.Config, ", "), grantEntry(c, module))
		}
		for _, r := range capset.Describe(c.Dropped) {
			fmt.Fprintf(w, "    - no longer requests %s\n", termsafe.Line(r))
		}
		for _, t := range c.Text {
			// The module's words, marked as such on every line, like the
			// description in the review.
			diff := termsafe.Text(install.FormatWordDiff(t.Diff))
			fmt.Fprintf(w, "    ~ %s:\n      │ %s\n", t.Field, strings.ReplaceAll(diff, "\n", "\n      │ "))
		}
	}
}

// reworded names the tools and fields whose words changed.
func reworded(u *install.Update) string {
	var parts []string
	for _, d := range u.Drift {
		parts = append(parts, "tool "+termsafe.Line(d.Tool)+" differs from tools.descriptors")
	}
	for _, c := range u.Changes {
		var fields []string
		for _, t := range c.Text {
			fields = append(fields, t.Field)
		}
		if len(fields) > 0 {
			parts = append(parts, "tool "+termsafe.Line(c.Name)+": "+strings.Join(fields, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// growth names each new request of each tool, for the refusal of an
// update that asks for more: "tool fetch requests net=https://127.0.0.1
// (...), memory=read over every topic (the whole store)".
func growth(module string, changes []install.ToolChange) string {
	var tools []string
	for _, c := range changes {
		if requests := capset.Describe(c.Grown); len(requests) > 0 {
			tools = append(tools, fmt.Sprintf("tool %s requests %s", termsafe.Line(c.Name), termsafe.Join(requests, ", ")))
		}
		if granted := capset.Describe(c.Granted); len(granted) > 0 {
			tools = append(tools, fmt.Sprintf("tool %s is granted %s by %s", termsafe.Line(c.Name), termsafe.Join(granted, ", "), grantEntry(c, module)))
		}
		if len(c.Config) > 0 {
			tools = append(tools, fmt.Sprintf("tool %s reads config %s of %s", termsafe.Line(c.Name), termsafe.Join(c.Config, ", "), grantEntry(c, module)))
		}
	}
	return strings.Join(tools, "; ")
}

// grantEntry names the config entry that grants an added tool what it has:
// "tools.grants.helper (module released)".
func grantEntry(c install.ToolChange, module string) string {
	return fmt.Sprintf("tools.grants.%s (module %s)", termsafe.Line(c.GrantKey), termsafe.Line(module))
}
