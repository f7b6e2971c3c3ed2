//go:build !linux

package codecache

import "io/fs"

// stampsReliable: elsewhere a stamp is only the mtime, which a write can
// set back, so every check hashes every entry.
const stampsReliable = false

func stampOf(info fs.FileInfo) stamp {
	return stamp{mtimeNs: info.ModTime().UnixNano()}
}
