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

// groupsOf reads the groups of a verified token from its claims. With
// Options.RequireGroups, a token that does not carry the groups claim is
// refused, and so is one whose issuer says its groups are elsewhere:
// Entra ID leaves the groups claim out when a person is in too many
// groups and says so with _claim_names (naming the claim) or hasgroups.
// Either way the token's groups are unknown, and reading them as none
// would drop its bearer from every role that narrows what they may do.
func (v *Verifier) groupsOf(all map[string]json.RawMessage) ([]string, error) {
	name := v.opts.GroupsClaim
	raw := all[name]
	if v.opts.RequireGroups {
		if overage(all, name) {
			return nil, refuse("the access token does not carry the subject's groups: its issuer moved them out of the token "+
				"(too many groups: _claim_names or hasgroups, Entra ID's group overage), and this server decides by groups "+
				"(server.oauth.require_groups_claim); have the issuer send only the groups assigned to the application",
				"claim %q", name)
		}
		if len(raw) == 0 || string(raw) == "null" {
			return nil, refuse(fmt.Sprintf("the access token carries no %s claim, which server.oauth.require_groups_claim requires: "+
				"ask the authorization server for the groups (e.g. request the groups scope, or add a groups mapper)", name),
				"claim %q absent", name)
		}
	}
	groups, err := groupList(raw)
	if err != nil {
		return nil, refuse("the access token's groups claim is malformed", "claim %q: %v", name, err)
	}
	return groups, nil
}

// overage reports whether claims say the groups claim called name is not
// in the token: _claim_names names it (OpenID Connect's distributed
// claims, as Entra ID's group overage uses them), or hasgroups is true.
// A _claim_names that is not an object is taken to say so too: what it
// would name cannot be known.
func overage(all map[string]json.RawMessage, name string) bool {
	if raw, ok := all["_claim_names"]; ok && string(raw) != "null" {
		var names map[string]json.RawMessage
		if err := json.Unmarshal(raw, &names); err != nil {
			return true
		}
		if _, ok := names[name]; ok {
			return true
		}
	}
	return string(all["hasgroups"]) == "true"
}

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
