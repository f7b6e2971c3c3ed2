package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// checkKeysAsWritten looks at config.yaml's keys as the file writes them,
// before viper lower-cases them all: two keys of one mapping that differ
// only in case (tools.gates "Danger" and "danger") are one key to viper,
// which keeps one entry and drops the other without a word, so a block
// written beside an allow could vanish. They are refused, naming both.
// And a tools.gates, tools.scopes or tools.tasks pattern is checked as written, where a
// class range that lower-casing narrows ("[A-z]" becomes "[a-z]") can
// still be seen (see checkToolPattern). A document that does not parse is
// left to viper to report.
func checkKeysAsWritten(file string, data []byte) problems {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return nil
	}
	var errs problems
	add := func(n *yaml.Node, format string, args ...any) {
		where, line, col := at(file, n)
		errs = append(errs, problem{at: where, line: line, col: col, msg: fmt.Sprintf(format, args...)})
	}
	var walk func(n *yaml.Node, at string)
	walk = func(n *yaml.Node, at string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, at)
			}
		case yaml.MappingNode:
			seen := map[string]string{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				written := n.Content[i].Value
				key := ToolKey(written) // viper's fold (configkey.Fold)
				if prev, dup := seen[key]; dup {
					add(n.Content[i], "%s: %q and %q are one key (config keys ignore case), and one would be dropped; keep one", join(at, key), prev, written)
				}
				seen[key] = written
				if at == "tools.gates" || at == "tools.scopes" || at == "tools.tasks" {
					if err := checkToolPattern(written); err != nil {
						add(n.Content[i], "%s: %q is not a tool name or pattern: %v", join(at, written), written, err)
					}
				}
				walk(n.Content[i+1], join(at, key))
			}
		}
		// An alias (*name) repeats a node checked where it was anchored.
	}
	walk(&root, "")
	return errs
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}
