package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/runlimits"
	"github.com/warden-run/warden/internal/scaffold"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/internal/userdirs"
)

func newNewCmd() *cobra.Command {
	var lang, parent string
	cmd := &cobra.Command{
		Use:   "new NAME",
		Short: "Create a tool project: source, Makefile, config.yaml and the SDK",
		Long: `Create the folder NAME (in --dir, default the current folder) holding a complete tool
named NAME that counts the words in a text: its source, a Makefile (make builds
build/NAME.wasm, make test calls it through warden, make clean), a README, a .gitignore,
a config.yaml that loads the module from build/, and the language's SDK, so that the
project builds offline:

  go              main.go with the Go SDK vendored in vendor/ (the Go warden needs; no proxy)
  c               C with warden.h and warden.c (clang with a wasm32-wasi target)
  assemblyscript  AssemblyScript with the SDK package in warden-sdk/ (npm)
  wat             WebAssembly text written by hand against docs/abi.md (wabt's wat2wasm)

--lang takes any case, and golang for go, as or ts for assemblyscript.

NAME must be a valid tool name (1-128 of A-Z a-z 0-9 _ - . starting with a letter or
digit). An existing folder is used only when it is empty.`,
		Example: `  warden new wordcount --lang go
  warden new wc --lang wat --dir ~/tools`,
		Args: cobraArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			lang, err := scaffold.Language(lang)
			if err != nil {
				return usageError{err}
			}
			dir, err := scaffold.New(parent, args[0], lang)
			if err != nil {
				return usageError{err}
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			printNextSteps(cmd.OutOrStdout(), args[0], lang, dir, abs)
			return nil
		},
	}
	cmd.Flags().StringVarP(&lang, "lang", "l", "go", "the language: "+strings.Join(scaffold.Languages, ", ")+" (or golang, as, ts)")
	cmd.Flags().StringVar(&parent, "dir", ".", "the folder to create the project in")
	return cmd
}

// aLanguageTool names a tool of each language with its article.
var aLanguageTool = map[string]string{"go": "a Go tool", "c": "a C tool",
	"assemblyscript": "an AssemblyScript tool", "wat": "a WebAssembly text tool"}

func printNextSteps(w io.Writer, name, lang, dir, abs string) {
	fmt.Fprintf(w, "Created %s: %s named %s.\n\nNext:\n", termsafe.Line(abs), aLanguageTool[lang], termsafe.Line(name))
	fmt.Fprintf(w, "  cd %s\n", termsafe.Line(dir))
	testCmd := "make test"
	if exe, err := executable(); err == nil {
		// make test runs $(WARDEN), warden by default: name this binary
		// when it is not the warden on PATH.
		if onPath, err := exec.LookPath("warden"); err != nil || !sameFile(onPath, exe) {
			testCmd = "make test WARDEN=" + exe
		}
	}
	fmt.Fprintf(w, "  %-40s # build build/%s.wasm and call it through warden\n", termsafe.Line(testCmd), termsafe.Line(name))
	fmt.Fprintf(w, "  %-40s # rebuild on every save, show the tools\n", "warden dev")
	fmt.Fprintf(w, "  %-40s # serve it over MCP (stdio)\n", "warden serve -c config.yaml")
	fmt.Fprintf(w, "  %-40s # the snippet for an MCP client\n", "warden mcp-config claude -c config.yaml")
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// executable is the absolute path of this warden, symlinks resolved, as a
// client must run it.
// thisOS is the OS warden runs on, for the per-OS rules of
// scaffold.ClientFiles and scaffold.NativePath; a folder the OS cannot
// name is left empty, and the rules print the OS's placeholder for it.
func thisOS() scaffold.OS {
	o := scaffold.OS{GOOS: runtime.GOOS}
	// The same home and config dir warden's deny rules and cache use
	// (internal/userdirs: $HOME, else the user database).
	o.Home, _ = userdirs.Home()
	o.ConfigDir, _ = userdirs.ConfigDir()
	return o
}

func executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the path of this warden binary: %w", err)
	}
	return filepath.EvalSymlinks(exe)
}

func newDevCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "dev [DIR]",
		Short: "Rebuild a tool project on every save and show its tools",
		Long: `Watch the sources of the project in DIR (default the current folder; its subfolders
too, but not vendor/, node_modules/, build/ or warden-sdk/), run make there after every
save, print the build's output, then the tools of every .wasm file in DIR and DIR/build as
warden inspect loads them (under DIR/config.yaml's limits). A failed build is reported and dev waits for
the next save. Stop it with Ctrl-C.

A warden serve -c DIR/config.yaml running meanwhile reloads the rebuilt module by
itself (it watches its tools dir) and tells its clients the tool list changed.`,
		Example: `  warden new wc --lang go && cd wc && warden dev`,
		Args:    cobraArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if _, err := os.Stat(filepath.Join(dir, "Makefile")); err != nil {
				return usagef("%s has no Makefile: warden dev runs make there (warden new creates a project)", dir)
			}
			// The project's config, not the one of the folder dev was
			// started from: its limits are those the module runs under.
			if cfg := filepath.Join(dir, "config.yaml"); !cmd.Flags().Changed("config") {
				if _, err := os.Stat(cfg); err == nil {
					g.configPath = cfg
				} else if errors.Is(err, fs.ErrNotExist) {
					g.configPath = ""
				}
			}
			ctx := cmd.Context()
			a, _, err := g.start(ctx)
			if err != nil {
				return err
			}
			defer a.Close(ctx)
			errOut := cmd.ErrOrStderr()
			changes, err := scaffold.Watch(ctx, dir, func(err error) {
				fmt.Fprintln(errOut, "warden dev: watch:", err)
			})
			if err != nil {
				return err
			}
			d := &scaffold.Dev{
				Dir:      dir,
				Out:      cmd.OutOrStdout(),
				Debounce: scaffold.DefaultDebounce,
				Describe: func(ctx context.Context, path string) (string, error) {
					return describeModule(ctx, a, path)
				},
			}
			if err := d.Run(ctx, changes); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
}

// describeModule loads the module at path as warden inspect does and lists
// its tools, and the ones it rejected with why.
func describeModule(ctx context.Context, a *app.App, path string) (string, error) {
	m, err := a.Runtime().LoadFile(ctx, path, runlimits.Module(a.Config(), catalog.ModuleName(path)))
	if err != nil {
		return "", err
	}
	defer m.Close(ctx)
	var b strings.Builder
	fmt.Fprintf(&b, "%s (sha256 %s):\n", termsafe.Line(filepath.Base(path)), m.SHA256()[:12])
	for _, t := range m.Tools() {
		schema, _ := json.Marshal(t.Descriptor.InputSchema)
		fmt.Fprintf(&b, "  tool %s: %s\n    input %s\n", termsafe.Line(t.Descriptor.Name),
			termsafe.Line(t.Descriptor.Description), termsafe.Line(string(schema)))
	}
	for _, r := range m.Rejected() {
		fmt.Fprintf(&b, "  rejected %s: %s\n", termsafe.Line(r.Name), termsafe.Message(r.Reason.Error()))
	}
	return b.String(), nil
}

func newMCPConfigCmd(g *globalFlags) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "mcp-config claude|vscode|cursor",
		Short: "Print the JSON that registers this warden with an MCP client",
		Long: `Print the snippet that makes an MCP client start this warden binary (its absolute
path, symlinks resolved) serving the config in force (--config, $WARDEN_CONFIG or the
project's config.yaml, made absolute: a client starts servers from a folder of its own).

  claude   Claude Desktop (claude_desktop_config.json) and Claude Code (.mcp.json):
           {"mcpServers": {NAME: {"command", "args"}}}
  cursor   Cursor (.cursor/mcp.json): the same shape
  vscode   VS Code (.vscode/mcp.json): {"servers": {NAME: {"type": "stdio", "command", "args"}}}

Paths are in this OS's form (C:\\Users\\… in JSON on Windows). The JSON goes to stdout;
stderr says where this OS's client keeps the file to merge it into: Claude Desktop's
claude_desktop_config.json in ~/Library/Application Support/Claude (macOS) or
%APPDATA%\Claude (Windows), VS Code's mcp.json in its user folder or .vscode/, Cursor's
~/.cursor/mcp.json or .cursor/.`,
		Example: `  warden mcp-config claude
  warden mcp-config vscode -c ~/tools/config.yaml --name tools > .vscode/mcp.json`,
		Args: cobraArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.requireConfig(mcpConfigHint); err != nil {
				return err
			}
			cfg, err := filepath.Abs(g.configPath)
			if err != nil {
				return err
			}
			if _, err := os.Stat(cfg); err != nil {
				return usagef("config %s: %v", cfg, err)
			}
			exe, err := executable()
			if err != nil {
				return err
			}
			host := thisOS()
			files, err := scaffold.ClientFiles(args[0], host)
			if err != nil {
				return usageError{err}
			}
			if exe, err = scaffold.NativePath(host, exe); err != nil {
				return fmt.Errorf("the path of this warden binary: %w", err)
			}
			if cfg, err = scaffold.NativePath(host, cfg); err != nil {
				return fmt.Errorf("the config's path: %w", err)
			}
			out, err := scaffold.MCPConfig(args[0], name, exe, cfg)
			if err != nil {
				return usageError{err}
			}
			if _, err = cmd.OutOrStdout().Write(out); err != nil {
				return err
			}
			// Where to put it goes to stderr: stdout stays the JSON alone,
			// ready to redirect into a new file.
			w := cmd.ErrOrStderr()
			fmt.Fprintln(w, "Merge it into the client's file (create it with this content if there is none):")
			for _, f := range files {
				fmt.Fprintf(w, "  %-29s %s\n", f.Client+":", f.Path)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "warden", "the server's name in the client")
	return cmd
}
