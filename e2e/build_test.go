package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// buildWarden builds cmd/warden into dir.
func buildWarden(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "warden")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/warden")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/warden: %v\n%s", err, out)
	}
	return bin
}
