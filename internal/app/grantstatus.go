package app

import (
	"errors"
	"fmt"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs/fs"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/download"
	"github.com/warden-run/warden/tool"
)

// Grants judges grants by the gates that calls go through, so that what
// `warden grant` accepts and what `warden tools` shows as granted is what a
// call is allowed: a grant no call can use is refused by the one and shown
// as not granted by the other. It is built from a config, like the
// capabilities a server runs with.
type Grants struct {
	fs *fs.FS
}

// GrantProblem is one granted value and what is wrong with it.
type GrantProblem struct {
	Key, Value string // the grant key ("fs.read") and the value as written
	Err        error  // the reason, worded as the call-time denial
}

// Error is the reason as a person is shown it: a value typed like a URL
// with credentials (fs.read=./https://u:pw@h/x) shows no userinfo.
func (p GrantProblem) Error() string { return download.RedactText(p.Err.Error()) }

// GrantStatus is what a tool's grant gives at call time.
type GrantStatus struct {
	// Usable is the grant less the values no call can use: what to show
	// as granted, and what a request is covered by.
	Usable tool.Capabilities
	// Unusable are the values every call would be refused under: outside
	// every root, leaving their root, denied (security.deny or warden's
	// own files), or through a symlink that leads away.
	Unusable []GrantProblem
	// Absent are usable fs values naming nothing yet: they work once the
	// path is created, but a typo looks the same.
	Absent []GrantProblem
}

// NewGrants returns the judge of grants under cfg: its project roots, deny
// rules and warden's own files.
func NewGrants(cfg *config.Config) (*Grants, error) {
	f, err := fs.New(fs.Config{ProjectRoot: cfg.Project.Root, Roots: cfg.Project.Roots, Deny: cfg.Security.Deny, Own: ownFiles(cfg)})
	if err != nil {
		return nil, fmt.Errorf("fs capability: %w", err)
	}
	return &Grants{fs: f}, nil
}

// Status judges granted, the grant of toolName, value by value. Only the
// fs keys can hold a value that config accepts but no call can use; the
// other keys' values are checked when config loads.
func (g *Grants) Status(toolName string, granted tool.Capabilities) GrantStatus {
	s := GrantStatus{Usable: granted}
	s.Usable.FS.Read = g.filter(&s, "fs.read", toolName, granted.FS.Read)
	s.Usable.FS.Write = g.filter(&s, "fs.write", toolName, granted.FS.Write)
	return s
}

func (g *Grants) filter(s *GrantStatus, key, toolName string, values []string) []string {
	var usable []string
	for _, v := range values {
		exists, err := g.fs.CheckGrant(key, toolName, v)
		switch {
		case err != nil:
			// The call's own words, without the kind ("denied: ") that a
			// tool sees in its error.
			var te *tool.Error
			if errors.As(err, &te) {
				err = errors.New(te.Message)
			}
			s.Unusable = append(s.Unusable, GrantProblem{key, v, err})
			continue
		case !exists:
			s.Absent = append(s.Absent, GrantProblem{key, v,
				fmt.Errorf("%q does not exist (yet); the grant works once it is created", v)})
		}
		usable = append(usable, v)
	}
	return usable
}

// CheckChanges judges the values that `warden grant` is about to add: err
// refuses the fs values no call could use, each named by its key path;
// warnings are the fs values that name nothing yet.
func (g *Grants) CheckChanges(toolName string, changes []config.GrantChange) (warnings []string, err error) {
	var c tool.Capabilities
	for _, ch := range changes {
		switch ch.Key {
		case "fs.read":
			c.FS.Read = append(c.FS.Read, ch.Values...)
		case "fs.write":
			c.FS.Write = append(c.FS.Write, ch.Values...)
		}
	}
	s := g.Status(toolName, c)
	prefix := "tools.grants." + configkey.Fold(toolName) + "."
	var errs []error
	for _, p := range s.Unusable {
		errs = append(errs, fmt.Errorf("%s%s: %s", prefix, p.Key, p.Error()))
	}
	for _, p := range s.Absent {
		warnings = append(warnings, prefix+p.Key+": "+p.Error())
	}
	return warnings, errors.Join(errs...)
}
