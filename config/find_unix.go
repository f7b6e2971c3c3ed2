//go:build unix

package config

import (
	"io/fs"
	"os"
	"syscall"
)

// foreignOwner reports the owner of the file info describes and whether it
// is someone other than this process's user. Root's files count as the
// user's own only for root: /config.yaml is no more the user's than
// /tmp/config.yaml.
func foreignOwner(_ string, info fs.FileInfo) (owner, me int, foreign bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	owner, me = int(st.Uid), os.Geteuid()
	return owner, me, owner != me
}
