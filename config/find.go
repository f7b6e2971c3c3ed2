package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FileName is the name of the config file Find looks for.
const FileName = "config.yaml"

// Find returns the config file that governs dir: dir/config.yaml, else
// the one in the nearest parent directory, searched up to the filesystem
// root as git searches for .git. The path returned is absolute, so the
// config's relative paths resolve against its own directory (see Load)
// and a command run in a subfolder of a project behaves as it does at its
// root.
//
// A config.yaml in a parent directory that belongs to another user is
// refused (*ForeignError), as git refuses such a repository: on a shared
// machine anyone may write /tmp/config.yaml, and a config grants
// capabilities. One in dir itself is where the person chose to be, and is
// read whoever owns it. A symlink named config.yaml in a parent must be the
// user's, and so must its target. A directory named config.yaml is not a
// config.
//
// When there is none, the error is a *NotFoundError listing every place
// looked in.
func Find(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", FileName, err)
	}
	nf := &NotFoundError{Dir: dir}
	for d := dir; ; {
		p := filepath.Join(d, FileName)
		// Anything but a regular file (or a symlink to one) is not there,
		// whatever the reason: missing, unreadable, a directory.
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() {
			if d != dir {
				// The link's owner counts as well as its target's: relative
				// paths in the config resolve against the link's folder.
				if link, err := os.Lstat(p); err == nil {
					if foreign := foreignOwner(p, link); foreign != nil {
						return "", foreign
					}
				}
				if foreign := foreignOwner(p, info); foreign != nil {
					return "", foreign
				}
			}
			return p, nil
		}
		nf.Looked = append(nf.Looked, d)
		parent := filepath.Dir(d)
		if parent == d {
			return "", nf
		}
		d = parent
	}
}

// NotFoundError is Find's error when no directory from Dir up to the
// root has a config.yaml.
type NotFoundError struct {
	Dir string
	// Looked are the directories searched, Dir first.
	Looked []string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no %s in %s or any parent (looked in: %s)", FileName, e.Dir, strings.Join(e.Looked, ", "))
}

// ForeignError is Find's error for a config.yaml in a parent directory
// that another user owns.
type ForeignError struct {
	Path        string
	Owner, User int // uids; -1 where owners are not uids
	// OwnerName and UserName name them where owners are not uids
	// (Windows: account and SID).
	OwnerName, UserName string
}

func (e *ForeignError) Error() string {
	if e.OwnerName != "" {
		return fmt.Sprintf("%s belongs to %s, not to you (%s): a config found in a parent folder is used only when it is yours", e.Path, e.OwnerName, e.UserName)
	}
	return fmt.Sprintf("%s belongs to uid %d, not to you (uid %d): a config found in a parent folder is used only when it is yours", e.Path, e.Owner, e.User)
}
