package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// releaseTargets are the GOOS/GOARCH pairs .goreleaser.yaml builds (and
// make cross compiles).
var releaseTargets = []string{"linux/amd64", "linux/arm64", "darwin/arm64", "darwin/amd64", "windows/amd64", "windows/arm64"}

// TestThirdPartyNotices: THIRD_PARTY_NOTICES, which every release archive
// carries, names every module (at its go.mod version) that the warden
// binary of any release target links, so a new or upgraded dependency
// fails here until `make notices` is run. It reads the module graph
// offline, where make notices needs the module cache and is slow.
func TestThirdPartyNotices(t *testing.T) {
	notices, err := os.ReadFile(filepath.Join("..", "..", "THIRD_PARTY_NOTICES"))
	if err != nil {
		t.Fatal(err)
	}
	// Each entry's header line is "MODULE[/DIR] VERSION": go-licenses
	// names a module by the folder its license file is in.
	headers := map[string]string{}
	lines := strings.Split(string(notices), "\n")
	for i, line := range lines {
		if line == strings.Repeat("=", 80) && i+1 < len(lines) {
			name, version, _ := strings.Cut(lines[i+1], " ")
			headers[name] = version
		}
	}
	linked := map[string]string{}
	for _, target := range releaseTargets {
		goos, goarch, _ := strings.Cut(target, "/")
		cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}", ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list for %s: %v", target, err)
		}
		for _, line := range strings.Fields(strings.ReplaceAll(string(out), " ", "@")) {
			path, version, _ := strings.Cut(line, "@")
			// go-licenses drops the +incompatible of a pre-modules major.
			linked[path] = strings.TrimSuffix(version, "+incompatible")
		}
	}
	for path, version := range linked {
		found := false
		for name, v := range headers {
			if (name == path || strings.HasPrefix(name, path+"/") || strings.HasPrefix(path, name+"/")) && v == version {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("THIRD_PARTY_NOTICES has no entry for %s %s, which warden links: run make notices", path, version)
		}
	}
}
