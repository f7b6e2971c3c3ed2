package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// wazeroModule is the runtime whose version `warden version` reports:
// compiled code in the cache is keyed by it, and a bug report needs it.
const wazeroModule = "github.com/tetratelabs/wazero"

// commit and date are stamped by release builds (.goreleaser.yaml) with
// -ldflags "-X main.commit=... -X main.date=...", beside main.version
// (root.go). A release is built from a clean checkout, but with -trimpath
// and without the VCS stamp go build would otherwise add (GoReleaser's
// builds may run with -buildvcs=false), so the release says what it was
// built from itself; other builds fall back to the build info.
var (
	commit = ""
	date   = ""
)

// stamp is what the release build wrote into the binary; empty fields
// fall back to the build info.
type stamp struct{ version, commit, date string }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print warden's version, commit, build date, target, and the Go and wazero versions",
		Long: `Print the version warden was released as (or how it was built), the commit it was
built from (with "(modified)" when the tree had uncommitted changes), when that commit was
made (a release's build date: releases are built reproducibly, stamped with the commit's
time), the OS and architecture it was built for, and the versions of Go and of wazero, the
WebAssembly runtime, it was built with. warden --version prints the same.`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), thisVersion())
			return err
		},
	}
}

// thisVersion is what `warden version` and `warden --version` print for
// this binary.
func thisVersion() string {
	s := stamp{version: version, commit: commit, date: date}
	return versionText(s, runtime.GOOS+"/"+runtime.GOARCH, readBuildInfo())
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

// versionText is what `warden version` prints, from the stamped release
// fields and the build info go build records: the module version (a
// release installed with go install), vcs.revision, vcs.time and
// vcs.modified (a build in a git checkout), the Go version and the wazero
// module's version. target is GOOS/GOARCH; an amd64 build made for a
// higher microarchitecture level than the default says which
// (GOAMD64=v3), as that binary does not run on every amd64 machine.
func versionText(s stamp, target string, info *debug.BuildInfo) string {
	v, rev, when, goVersion, wazero := s.version, "unknown", "unknown", "unknown", "unknown"
	if info != nil {
		if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		goVersion = info.GoVersion
		var modified bool
		for _, set := range info.Settings {
			switch set.Key {
			case "vcs.revision":
				rev = set.Value
			case "vcs.time":
				when = set.Value
			case "vcs.modified":
				modified = set.Value == "true"
			case "GOAMD64":
				if set.Value != "v1" {
					target += " (GOAMD64=" + set.Value + ")"
				}
			}
		}
		if modified {
			rev += " (modified)"
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
	if s.commit != "" {
		rev = s.commit
	}
	if s.date != "" {
		when = s.date
	}
	var b strings.Builder
	fmt.Fprintf(&b, "warden %s\n", v)
	fmt.Fprintf(&b, "commit: %s\n", rev)
	fmt.Fprintf(&b, "date:   %s\n", when)
	fmt.Fprintf(&b, "target: %s\n", target)
	fmt.Fprintf(&b, "go:     %s\n", goVersion)
	fmt.Fprintf(&b, "wazero: %s\n", wazero)
	return b.String()
}
