package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/warden-run/warden/tool"
)

// ValidModuleName reports whether name may name a module: the rule of tool
// names (tool.ValidName), because module names become config keys
// (tools.pins.<module>, tools.limits.<module>, grants' module field).
func ValidModuleName(name string) bool { return tool.ValidName(name) }

// ModuleFiles lists the .wasm files directly in dir, sorted.
func ModuleFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("tools dir: %w", err)
	}
	var paths []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".wasm") {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return paths, nil
}
