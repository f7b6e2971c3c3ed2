package codecache

import (
	"io/fs"
	"syscall"
)

// stampsReliable: on Linux a stamp includes the ctime, which changes with
// every write and which no unprivileged call can set back.
const stampsReliable = true

func stampOf(info fs.FileInfo) stamp {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{mtimeNs: info.ModTime().UnixNano()}
	}
	return stamp{
		dev:     uint64(st.Dev),
		ino:     st.Ino,
		mtimeNs: st.Mtim.Nano(),
		ctime:   st.Ctim.Nano(),
	}
}
