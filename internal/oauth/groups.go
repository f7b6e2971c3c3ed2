package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// DefaultGroupsClaim is the claim a token's groups are read from when
// Options.GroupsClaim is empty.
const DefaultGroupsClaim = "groups"

// Bounds of a token's groups claim. A claim past them is refused, not
// cut: per-person policy (access.roles) may narrow what a group's members
// may do, so a group dropped from a long claim would widen what its member
// may do, and a name cut short could alias another group.
const (
	MaxGroups     = 256
	MaxGroupBytes = 256
)

// groupList reads a groups claim: a JSON string (one group) or an array of
// strings, each a group name, as written: no case folding, trimming or
// Unicode normalisation, so that two names are the same group only when
// they are the same bytes. Absent or null means no groups. A name that is
// empty, not UTF-8, or holds a control or format character (an invisible
// character could make two names print alike) is refused, as is a claim
// past MaxGroups or a name past MaxGroupBytes. Duplicates are kept once, in
// the claim's order.
func groupList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		list = []string{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New("neither a string nor a list of strings")
	}
	if len(list) > MaxGroups {
		return nil, fmt.Errorf("%d groups, the bound is %d", len(list), MaxGroups)
	}
	var groups []string
	seen := make(map[string]bool, len(list))
	for i, g := range list {
		if err := CheckGroup(g); err != nil {
			return nil, fmt.Errorf("group %d: %w", i, err)
		}
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// CheckGroup reports whether g may name a group: 1 to MaxGroupBytes bytes
// of UTF-8 without control or format characters. config checks the group
// names access.roles lists with it too, so that a configured name is one a
// token can carry.
func CheckGroup(g string) error {
	switch {
	case g == "":
		return errors.New("an empty group name")
	case len(g) > MaxGroupBytes:
		return fmt.Errorf("a group name of %d bytes, the bound is %d", len(g), MaxGroupBytes)
	case !utf8.ValidString(g):
		return errors.New("a group name that is not UTF-8")
	}
	for _, r := range g {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("a group name holding the control or format character %U", r)
		}
	}
	return nil
}
