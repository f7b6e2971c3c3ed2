package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/descriptorcheck"
	"github.com/warden-run/warden/internal/grantcmd"
	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/tool"
)

func newInstallCmd(g *globalFlags) *cobra.Command {
	var yes, acceptCapabilities, acceptFindings bool
	var name string
	cmd := &cobra.Command{
		Use:   "install FILE.wasm | oci://REGISTRY/REPO:TAG | oci://REGISTRY/REPO@sha256:… | https://…/TOOL.wasm",
		Short: "Review a module, copy it into the tools dir and pin its sha256 in config",
		Long: `Load a module in the sandbox (only _initialize and describe run), show its tools, what
each requests and what config grants it, then, once you confirm, copy it into the tools
dir and record its sha256 under tools.pins in config.yaml. A pinned module whose file
later changes is refused at load until it is installed (approved) again.

From a registry or a URL, the module is first downloaded (bounded by tools.fetch) and
its signature checked against security.signatures before anything of it runs; by
default (security.signature_mode: require) a module nobody you trust signed is
refused. Where it came from is recorded under tools.sources, so config.yaml is a
lockfile: ` + "`warden sync`" + ` fetches exactly those digests on another machine, and
` + "`warden update`" + ` looks for newer ones. Registry credentials come from your Docker
config (docker login, credential helpers).

Installing grants nothing: use ` + "`warden grant`" + ` for what a tool should be allowed.
A tool name another installed module already provides is refused.

Over an installed module, the review also shows how the new version differs, as
` + "`warden update`" + ` does: what its tools request beyond the installed version's (+),
and what config already grants a tool it adds. --yes alone refuses such growth;
confirm on a terminal, or pass --accept-capabilities too.

The review also checks each tool's descriptor for tool poisoning (text a person cannot
see, instructions aimed at the model, other modules' tool names, URLs, outsized
descriptions) and marks each finding (!) with its field, byte span and exact text.
security.descriptor_checks decides: warn, confirm (the default for a registry or a
URL: --yes alone refuses, confirm on a terminal or pass --accept-findings too) or
refuse. The descriptors as reviewed are locked under tools.descriptors: a module
whose tools later describe themselves otherwise is refused at load.`,
		Example: `  warden install ./echo.wasm
  warden install oci://ghcr.io/acme/fetch:1.2.0
  warden install https://example.com/releases/v1/fetch.wasm
  warden install --yes --name fetch ./fetch-v2.wasm
  warden install bin/tools/echo.wasm     # approve a changed module again`,
		Args: cobraArgs(cobra.ExactArgs(1)),
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
			inst := a.Installer()
			var r *install.Review
			if install.IsRemote(args[0]) {
				f, err := inst.Fetch(ctx, args[0], install.FetchOptions{})
				if err != nil {
					return err
				}
				defer f.Close()
				if r, err = inst.ReviewFetched(ctx, f, name); err != nil {
					return err
				}
			} else if r, err = inst.ReviewInstall(ctx, args[0], name); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			printReview(out, r)
			// Replacing an installed module is an update by hand: its
			// growth is shown and approved as an update's is.
			grown := false
			if r.Previous != "" && r.Previous != r.SHA256 {
				var changes []install.ToolChange
				changes, grown = inst.ReplacementChanges(r)
				fmt.Fprintln(out)
				printChanges(out, r.Module, changes)
				if grown && yes && !acceptCapabilities {
					return fmt.Errorf("not installed: its tools request more capabilities than the installed version (or a tool it adds is granted some already), which --yes alone does not approve: %s; "+
						"confirm on a terminal, or pass --accept-capabilities too; nothing changed", growth(r.Module, changes))
				}
			}
			if r.NeedsFindingsApproval() && yes && !acceptFindings {
				return fmt.Errorf("not installed: %s, which --yes alone does not approve; "+
					"read them above, then confirm on a terminal, or pass --accept-findings too; nothing changed", findingsSummary(r))
			}
			if !yes {
				if !isTerminal(cmd.InOrStdin()) {
					return usagef("not installed: confirm on a terminal, or pass --yes to install without asking")
				}
				question := "\nInstall %s as %s and pin it? [y/N] "
				if grown {
					question = "\nThe new version requests MORE capabilities (marked +). Install %s as %s and pin it anyway? [y/N] "
				}
				if r.NeedsFindingsApproval() {
					question = "\nThe descriptors have FINDINGS (marked !) that may be instructions to the model. Install %s as %s and pin it anyway? [y/N] "
				}
				// r.Source, not args[0]: a fetched module's is the canonical
				// URL, the one matched and fetched.
				fmt.Fprintf(out, question, termsafe.Line(r.Source), termsafe.Line(r.Dest))
				if !confirmed(out, cmd.InOrStdin()) {
					return fmt.Errorf("not installed")
				}
			}
			if err := inst.Install(ctx, r); err != nil {
				return err
			}
			fmt.Fprintf(out, "\ninstalled %s (sha256 %s pinned as tools.pins.%s in %s)\n",
				termsafe.Line(r.Dest), r.SHA256[:12], termsafe.Line(configkey.Fold(r.Module)), termsafe.Line(a.Config().File))
			if r.Origin != nil {
				fmt.Fprintf(out, "source locked as tools.sources.%s: %s at %s, signer %s\n", termsafe.Line(configkey.Fold(r.Module)),
					termsafe.Line(r.Origin.Ref), r.Origin.Digest, termsafe.Line(r.Origin.Signer))
			}
			for _, t := range r.Tools {
				if !t.Missing.IsZero() {
					// Capabilities that reach here passed the grant grammar
					// (tool.Descriptor.Validate), which admits no control
					// character; escaping is the second fence.
					name := termsafe.Line(t.Descriptor.Name)
					// An entry of another module would take the plain
					// command's values (grant adds to the entry's own
					// module): name the reviewed one, and BindGrant
					// refuses while that entry holds anything.
					module := ""
					if t.Elsewhere != nil {
						module = r.Module
						// BindGrant moves no entry that holds anything: say
						// how to empty it first, rather than suggest a
						// command that is refused.
						fmt.Fprintf(out, "%s: its grant entry belongs to another module; to give it to %s instead, empty the entry first (warden revoke %s --all), then:\n",
							name, termsafe.Line(r.Module), name)
					}
					fmt.Fprintf(out, "to grant what %s requests: %s\n",
						name, termsafe.Bound(grantcmd.Command(t.Descriptor.Name, module, t.Missing), termsafe.MaxText, false))
					if also := raisedTopics(t.Granted, t.Missing); t.Elsewhere == nil && len(also) > 0 {
						// The command is exactly the request, but config
						// holds one memory level per tool: say what else
						// it raises rather than let it pass unseen.
						fmt.Fprintf(out, "note: a tool has one memory level over all its topics: memory=%s would apply to %s too (granted %s today)\n",
							t.Missing.Memory, termsafe.Join(also, ", "), t.Granted.Memory)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "install without asking for confirmation")
	cmd.Flags().BoolVar(&acceptCapabilities, "accept-capabilities", false, "with --yes, also replace an installed module whose new version requests more capabilities")
	cmd.Flags().BoolVar(&acceptFindings, "accept-findings", false, "with --yes, also install a module whose descriptors have findings that security.descriptor_checks asks to confirm")
	cmd.Flags().StringVar(&name, "name", "", "module name to install under (default: the file name without .wasm)")
	return cmd
}

// printReview shows what a person decides on. Every string in it but the
// hashes and counts comes from the module (or its file name), so each goes
// through termsafe: a module cannot clear the screen, overwrite a line or
// hide what it requests.
func printReview(w io.Writer, r *install.Review) {
	fmt.Fprintf(w, "Module   %s (%d bytes, sha256 %s)\n", termsafe.Line(r.Module), r.Size, r.SHA256)
	fmt.Fprintf(w, "From     %s\n", termsafe.Line(r.Source))
	if f := r.Fetched; f != nil {
		fmt.Fprintf(w, "Fetched  %s\n", termsafe.Line(f.From))
		fmt.Fprintf(w, "Digest   %s\n", f.Digest)
		fmt.Fprintf(w, "Signed   %s\n", termsafe.Bound(f.Signature.String(), termsafe.MaxText, false))
		// What the install record will say: from the verified signature only.
		fmt.Fprintf(w, "Signer   %s\n", termsafe.Line(f.Signature.Signer()))
	}
	dest := termsafe.Line(r.Dest)
	switch {
	case r.Previous == "":
		fmt.Fprintf(w, "Into     %s (new)\n", dest)
	case r.Previous == r.SHA256:
		fmt.Fprintf(w, "Into     %s (the same file is installed)\n", dest)
	default:
		fmt.Fprintf(w, "Into     %s (replaces sha256 %s)\n", dest, r.Previous)
	}
	fmt.Fprintf(w, "Imports  %s\n", termsafe.Bound(summarizeImports(r.Imports), termsafe.MaxText, false))
	for _, t := range r.Tools {
		d := t.Descriptor
		fmt.Fprintf(w, "\nTool %s", termsafe.Line(d.Name))
		if d.Title != "" {
			fmt.Fprintf(w, " — %s", termsafe.Line(d.Title))
		}
		if d.Version != "" {
			fmt.Fprintf(w, " (version %s)", termsafe.Line(d.Version))
		}
		if d.Category != "" {
			fmt.Fprintf(w, " [category %s]", termsafe.Line(d.Category))
		}
		if len(d.Tags) > 0 {
			fmt.Fprintf(w, " [tags %s]", termsafe.Join(d.Tags, ", "))
		}
		// Every line of the description is marked as the module's words,
		// so that it cannot pass for a line of warden's own (a fake
		// capability table, a fake tool header).
		desc := termsafe.Text(strings.TrimSpace(d.Description))
		fmt.Fprintf(w, "\n  │ %s\n", strings.ReplaceAll(desc, "\n", "\n  │ "))
		if hints := annotationHints(d.Annotations); hints != "" {
			fmt.Fprintf(w, "  hints: %s (claimed by the tool, not enforced)\n", hints)
		}
		if ts := d.TaskSupport(); ts != tool.TaskForbidden {
			fmt.Fprintf(w, "  tasks: %s (may run as an MCP task, under tools.limits.%s.task_timeout and task_fuel instead of the interactive timeout)\n",
				ts, termsafe.Line(configkey.Fold(d.Name)))
		}
		printCapabilities(w, "  ", d.Capabilities, t.Granted, t.Missing)
		if len(t.Config) > 0 {
			// What the tool reads besides its capabilities: the keys
			// only, as values may be secrets.
			fmt.Fprintf(w, "  config: %s (tools.grants.%s.config; values not shown)\n",
				termsafe.Join(t.Config, ", "), termsafe.Line(configkey.Fold(d.Name)))
		}
		if t.Elsewhere != nil {
			// The entry of this tool's name belongs to another module: say
			// so, or "nothing granted" would read as a config mistake.
			fmt.Fprintf(w, "  note: %s\n", termsafe.Message(t.Elsewhere.Error()))
		}
		printFindings(w, "  ", t.Findings)
	}
	for _, rj := range r.Rejected {
		fmt.Fprintf(w, "\nRejected tool %s: %s\n", termsafe.Line(strconv.Quote(rj.Name)), termsafe.Message(rj.Reason.Error()))
	}
}

// printFindings shows each tool-poisoning finding with its field, byte
// span and the exact text, quoted with Go escapes (strconv.QuoteToASCII)
// so that an invisible character shows as \U000e0041 rather than as
// nothing: the review is where a person sees what a model would read.
func printFindings(w io.Writer, indent string, findings []descriptorcheck.Finding) {
	for _, f := range findings {
		fmt.Fprintf(w, "%s! %s %s in %s [bytes %d:%d]: %s\n%s    %s\n", indent, f.Severity, f.Rule,
			termsafe.Line(f.Field), f.Start, f.End, f.Why, indent, quoteBounded(f.Text))
	}
}

// quoteBounded is text quoted in ASCII, cut to a screen's worth.
func quoteBounded(text string) string {
	q := strconv.QuoteToASCII(text)
	if len(q) > 240 {
		q = q[:240] + "…(" + strconv.Itoa(len(text)) + " bytes)"
	}
	return q
}

// findingsSummary names a review's findings for a refusal: "2 findings
// (tool add: hidden-tag in description, sensitive-file in …)".
func findingsSummary(r *install.Review) string {
	all := r.Findings()
	var parts []string
	for _, f := range all {
		parts = append(parts, fmt.Sprintf("tool %s: %s in %s [%d:%d] %s", termsafe.Line(f.Tool), f.Rule, termsafe.Line(f.Field), f.Start, f.End, quoteBounded(f.Text)))
	}
	return fmt.Sprintf("its descriptors have %d finding(s) that security.descriptor_checks (%s) asks to confirm (%s)",
		len(all), r.Policy, strings.Join(parts, "; "))
}

// summarizeImports lists the warden host functions a module imports and
// only counts its WASI imports, which every toolchain adds.
func summarizeImports(imports []string) string {
	var out []string
	wasi := 0
	for _, imp := range imports {
		if strings.HasPrefix(imp, "wasi_snapshot_preview1.") {
			wasi++
			continue
		}
		out = append(out, imp)
	}
	if wasi > 0 {
		out = append(out, fmt.Sprintf("wasi_snapshot_preview1 (%d functions)", wasi))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func annotationHints(a *tool.Annotations) string {
	if a == nil {
		return ""
	}
	var hints []string
	for _, h := range []struct {
		name string
		v    *bool
	}{{"read-only", a.ReadOnlyHint}, {"destructive", a.DestructiveHint}, {"idempotent", a.IdempotentHint}, {"open-world", a.OpenWorldHint}} {
		if h.v != nil {
			if *h.v {
				hints = append(hints, h.name)
			} else {
				hints = append(hints, "not "+h.name)
			}
		}
	}
	return strings.Join(hints, ", ")
}

// printCapabilities shows, per grant key, what the tool requests, what
// config grants it and whether a request is not granted.
func printCapabilities(w io.Writer, indent string, requested, granted, missing tool.Capabilities) {
	req, gr, miss := capabilityRows(requested), capabilityRows(granted), capabilityRows(missing)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%sCAPABILITY\tREQUESTED\tGRANTED\t\n", indent)
	rows := 0
	for _, key := range config.GrantKeys {
		if req[key] == "" && gr[key] == "" {
			continue
		}
		rows++
		mark := ""
		if miss[key] != "" {
			mark = "← not granted: " + miss[key]
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", indent, key, dash(req[key]), dash(gr[key]), termsafe.Bound(mark, termsafe.MaxText, false))
	}
	if rows == 0 {
		fmt.Fprintf(tw, "%s(none)\t-\t-\t\n", indent)
	}
	tw.Flush()
}

func capabilityRows(c tool.Capabilities) map[string]string {
	return map[string]string{
		"fs.read":       termsafe.Join(c.FS.Read, ", "),
		"fs.write":      termsafe.Join(c.FS.Write, ", "),
		"memory":        termsafe.Line(string(c.Memory)),
		"memory.topics": termsafe.Join(c.MemoryTopics, ", "),
		"lsp":           termsafe.Join(c.LSP, ", "),
		"net":           termsafe.Join(c.Net, ", "),
		"env":           termsafe.Join(c.Env, ", "),
		"client":        termsafe.Join(c.Client, ", "),
	}
}

// raisedTopics are the topics granted today that raising the memory level
// to missing's (a request of a level over other topics) raises too.
func raisedTopics(granted, missing tool.Capabilities) []string {
	if missing.Memory == tool.MemoryNone || granted.Memory == tool.MemoryNone || granted.Memory == missing.Memory {
		return nil
	}
	var also []string
	for _, g := range granted.MemoryTopics {
		if !slices.Contains(missing.MemoryTopics, g) {
			also = append(also, g)
		}
	}
	return also
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// isTerminal reports whether r is a terminal, where a person can answer a
// question: a character device other than /dev/null (which is how
// non-interactive runs often close stdin).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(info, null)
}

// confirmed reads one answer line (bounded, whatever stdin is).
func confirmed(w io.Writer, r io.Reader) bool {
	line, err := bufio.NewReader(io.LimitReader(r, 256)).ReadString('\n')
	if err != nil {
		fmt.Fprintln(w) // no answer: end the prompt's line
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
