package config

import (
	"io/fs"

	"github.com/warden-run/warden/internal/osfile"
)

// foreignOwner returns a *ForeignError when the file at path, which info
// describes, belongs to someone other than this process's user: on Unix
// another uid than the effective one (root's files count as the user's own
// only for root: /config.yaml is no more the user's than /tmp/config.yaml),
// on Windows another SID than the user's. An owner that cannot be read is
// not the user's.
func foreignOwner(path string, info fs.FileInfo) *ForeignError {
	owner, user, mine, err := osfile.Owner(path, info)
	switch {
	case err != nil:
		return &ForeignError{Path: path, Owner: -1, User: -1, OwnerName: "an owner that cannot be read (" + err.Error() + ")", UserName: "this user"}
	case mine:
		return nil
	case owner.SID == "":
		return &ForeignError{Path: path, Owner: owner.UID, User: user.UID}
	}
	return &ForeignError{Path: path, Owner: -1, User: -1, OwnerName: owner.String(), UserName: user.String()}
}
