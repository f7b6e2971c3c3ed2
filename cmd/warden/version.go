package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// wazeroModule is the runtime whose version `warden version` reports:
// compiled code in the cache is keyed by it, and a bug report needs it.
const wazeroModule = "github.com/tetratelabs/wazero"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print warden's version, commit, and the Go and wazero versions it was built with",
		Long: `Print the version warden was released as (or how it was built), the commit it was
built from (with "(modified)" when the tree had uncommitted changes), and the versions of
Go and of wazero, the WebAssembly runtime, it was built with. warden --version prints the same.`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), versionText(readBuildInfo()))
			return err
		},
	}
}

// readBuildInfo is the binary's build info, nil when it has none (a binary
// built without module support).
func readBuildInfo() *debug.BuildInfo {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return info
}

// versionText is what `warden version` prints, from the stamped version
// and the build info go build records: the module version (a release
// installed with go install), vcs.revision and vcs.modified (a build in a
// git checkout), the Go version and the wazero module's version.
func versionText(info *debug.BuildInfo) string {
	v, commit, goVersion, wazero := version, "unknown", "unknown", "unknown"
	if info != nil {
		if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		goVersion = info.GoVersion
		var modified bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified {
			commit += " (modified)"
		}
		for _, dep := range info.Deps {
			if dep.Path == wazeroModule {
				wazero = dep.Version
				if dep.Replace != nil {
					wazero = strings.TrimSpace(dep.Replace.Path + " " + dep.Replace.Version)
				}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "warden %s\n", v)
	fmt.Fprintf(&b, "commit: %s\n", commit)
	fmt.Fprintf(&b, "go:     %s\n", goVersion)
	fmt.Fprintf(&b, "wazero: %s\n", wazero)
	return b.String()
}
