package doccheck

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/warden-run/warden/config"
)

// yamlBlock matches a fenced ```yaml block of Markdown and its text.
var yamlBlock = regexp.MustCompile("(?ms)^```ya?ml[^\\n]*\\n(.*?)^```")

// TestDocumentedConfigsLoad loads every config.yaml a document shows: each
// ```yaml block of README.md and docs/*.md whose top-level keys are config
// keys (project, tools, ...) or whose first line is a comment naming
// config.yaml. A block config.Load refuses (an unknown or renamed key, a
// value of the wrong type, a grant that no longer validates) fails here
// with the document and line, so an example that no longer loads is caught
// before a reader copies it.
func TestDocumentedConfigsLoad(t *testing.T) {
	root := repoRoot(t)
	// The environment overrides config keys (WARDEN_*): not here.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "WARDEN_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	topKeys := configTopKeys()
	loaded := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for _, m := range yamlBlock.FindAllSubmatchIndex(data, -1) {
			block := string(data[m[2]:m[3]])
			line := 1 + strings.Count(string(data[:m[2]]), "\n")
			if !isConfig(block, topKeys) {
				continue
			}
			loaded++
			dir := t.TempDir()
			file := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(file, []byte(block), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := config.Load(file); err != nil {
				t.Errorf("%s:%d: the config.yaml shown does not load: %v\n%s", rel, line, err, block)
			}
		}
	}
	if loaded < 10 {
		t.Fatalf("loaded only %d config blocks; the block pattern is broken", loaded)
	}
}

// isConfig reports whether a YAML block is a config.yaml: a comment naming
// config.yaml on its first line, or a top-level key of config.
func isConfig(block string, topKeys map[string]bool) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(block), "\n")
	if strings.HasPrefix(first, "#") && strings.Contains(first, "config.yaml") {
		return true
	}
	var doc map[string]any
	if yaml.Unmarshal([]byte(block), &doc) != nil {
		return false // not a mapping: not a config, and config.Load would say so
	}
	for k := range doc {
		if topKeys[k] {
			return true
		}
	}
	return false
}

// configTopKeys are the top-level keys of config.yaml, from config.Config.
func configTopKeys() map[string]bool {
	keys := map[string]bool{}
	typ := reflect.TypeFor[config.Config]()
	for i := range typ.NumField() {
		if k := typ.Field(i).Tag.Get("mapstructure"); k != "" && k != "-" {
			keys[k] = true
		}
	}
	return keys
}
