package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/secrets"
	"github.com/warden-run/warden/internal/termsafe"
)

func newSecretCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Store a secret in the OS keyring, and list the secrets config.yaml names",
		Long: `A secret is a value a tool reads with warden.env that config.yaml does not hold: the
secrets: section names where it is kept (a file, the OS keyring or an environment
variable) and the tools that may read it:

  secrets:
    GITHUB_TOKEN: {keyring: github-token, tools: [github]}
    DEPLOY_KEY:   {file: /run/secrets/deploy_key, tools: [deploy]}

The value is read at each call, so a rotated file or keyring entry is what the next call
gets, and it is redacted from every log and audit line. warden never writes a value into
config.yaml.`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Usage()
			return usageError{errUsageShown}
		},
	}
	set := &cobra.Command{
		Use:   "set NAME",
		Short: "Store a value in the OS keyring (service warden, entry NAME) without echoing it",
		Long: `set reads the value from the terminal without echoing it, or from stdin when stdin is
not a terminal (one trailing newline dropped), and stores it in the OS keyring: the
macOS Keychain, the Windows Credential Manager or the Secret Service on Linux (GNOME
Keyring, KeePassXC), under service "warden" and entry NAME, replacing what was there.
config.yaml names it with secrets.<KEY>.keyring: NAME.`,
		Example: `  warden secret set github-token
  printf %s "$TOKEN" | warden secret set github-token`,
		Args: cobraArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !config.ValidSecretName(name) {
				return usagef("%q is not a keyring entry name (%s)", name, config.SecretNameRule)
			}
			value, err := readSecret(cmd, name)
			if err != nil {
				return err
			}
			if err := secrets.Store(name, value); err != nil {
				return fmt.Errorf("secret %s: %w", name, err)
			}
			key := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name))
			fmt.Fprintf(cmd.OutOrStdout(), "Stored %s in the keyring (service %q). Let tools read it in config.yaml:\n\n  secrets:\n    %s: {keyring: %s, tools: [TOOL]}\n",
				name, secrets.KeyringService, key, name)
			return nil
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the secrets config.yaml names: name, source, tools bound, and whether each can be read now; never a value",
		Args:  cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.requireConfig(); err != nil {
				return err
			}
			g.noteDefaults()
			cfg, err := config.Load(g.configPath)
			if err != nil {
				return usageError{textError{err}}
			}
			printSecrets(cmd.OutOrStdout(), cfg)
			return nil
		},
	}
	list.Flags().AddFlagSet(g.flags())
	cmd.AddCommand(set, list)
	return cmd
}

// readSecret reads the value set stores: from the terminal without echo,
// else from stdin, at most secrets.MaxSize bytes.
func readSecret(cmd *cobra.Command, name string) (string, error) {
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && isTerminal(in) {
		fmt.Fprintf(cmd.ErrOrStderr(), "Value of %s (not shown): ", name)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(cmd.ErrOrStderr())
		if err != nil {
			return "", fmt.Errorf("read the value from the terminal: %w", err)
		}
		if len(b) == 0 {
			return "", errors.New("nothing stored: the value is empty")
		}
		return string(b), nil
	}
	b, err := io.ReadAll(io.LimitReader(in, secrets.MaxSize+2))
	if err != nil {
		return "", fmt.Errorf("read the value from stdin: %w", err)
	}
	value := secrets.TrimNewline(string(b))
	switch {
	case value == "":
		return "", errors.New("nothing stored: stdin held no value (pipe it in: printf %s \"$VALUE\" | warden secret set " + name + ")")
	case len(value) > secrets.MaxSize:
		return "", fmt.Errorf("nothing stored: the value is larger than %d KiB", secrets.MaxSize>>10)
	}
	return value, nil
}

// printSecrets lists cfg's secrets: each name, its source, the tools bound
// and whether it can be read now (the error names the source, never a
// value).
func printSecrets(out io.Writer, cfg *config.Config) {
	if len(cfg.Secrets) == 0 {
		fmt.Fprintln(out, "No secrets in "+cfg.File+" (see warden secret --help).")
		return
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSOURCE\tTOOLS\tSTATUS")
	for _, name := range slices.Sorted(maps.Keys(cfg.Secrets)) {
		src := cfg.SecretSource(name)
		status := "readable"
		if _, err := src.Read(); err != nil {
			status = "unreadable: " + err.Error()
		}
		tools := strings.Join(cfg.Secrets[name].Tools, ",")
		if tools == "" {
			tools = "(none)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", termsafe.Escape(strings.ToUpper(name)), termsafe.Escape(src.String()), termsafe.Escape(tools), termsafe.Escape(status))
	}
	w.Flush()
}
