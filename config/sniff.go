package config

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"

	"go.yaml.in/yaml/v3"
)

// TopLevelKeys are the keys a warden config may have at its top level.
func TopLevelKeys() []string {
	var keys []string
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		if k := t.Field(i).Tag.Get("mapstructure"); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// Sniff reads the top-level keys of the YAML file at path and reports
// whether any is one of warden's, so that a config.yaml found by chance in
// the working folder (another program's) is not taken for warden's. An
// empty file counts as warden's: it means "all defaults".
func Sniff(path string) (keys []string, isWarden bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return nil, false, fmt.Errorf("config %s: %w", path, yamlError(err))
	}
	if len(top) == 0 {
		return nil, true, nil
	}
	ours := TopLevelKeys()
	for k := range top {
		keys = append(keys, k)
		isWarden = isWarden || slices.Contains(ours, k)
	}
	sort.Strings(keys)
	return keys, isWarden, nil
}
