// Command gen writes the SDK archive of internal/scaffold (sdk.bundle):
// the Go guest SDK's import closure, the C SDK and the AssemblyScript
// package, so that warden new writes a project that builds offline.
// Run it with go generate ./internal/scaffold.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/warden-run/warden/internal/scaffold/bundle"
)

func main() {
	out := flag.String("o", "sdk.bundle", "the archive to write")
	flag.Parse()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		fail(fmt.Errorf("find warden's module root: %w", err))
	}
	files, err := bundle.Collect(strings.TrimSpace(string(root)))
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(*out, bundle.Format(files), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}
