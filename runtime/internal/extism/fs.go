package extism

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	wsys "github.com/tetratelabs/wazero/sys"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/runtime/internal/guest"
	"github.com/warden-run/warden/tool"
)

// guardedFS is an Extism plugin's WASI file system: one preopen, "/",
// whose every operation is a warden.fs request made for the call in
// progress. Grants, the deny-list, symlink checks and the size limits are
// therefore exactly a native tool's, checked per operation under the
// grants of the current call, and no host directory is ever mounted.
//
// A guest path is warden.fs's form after the leading slash: "/src/a.go" is
// the project file src/a.go, "/notes:todo.md" a file of the extra root
// "notes"; an absolute host path inside a root ("/home/me/proj/src/a.go")
// is also accepted. Files are read whole when opened for reading (up to
// warden.fs's read limit) and written whole when closed, so what a plugin
// sees is what warden.fs would have returned; rename, links, chmod and
// timestamps are not offered (ENOSYS).
type guardedFS struct {
	sys.UnimplementedFS
	in     *guest.Instance
	fs     hostfuncs.Capability
	locate func(abs string) (string, bool) // nil: only root-relative paths
	// gen is bumped at the end of every call; a file opened under an older
	// one is closed (EBADF), so nothing read under one call's grants is
	// readable by the next.
	gen atomic.Uint64
	// reads serves opens for reading (readFS).
	reads sys.FS
}

func newGuardedFS(in *guest.Instance, c hostfuncs.Capability) *guardedFS {
	g := &guardedFS{in: in, fs: c, locate: locatorOf(c)}
	g.reads = &sysfs.AdaptFS{FS: readFS{g}}
	return g
}

type locator interface {
	Locate(abs string) (string, bool)
}

func locatorOf(c hostfuncs.Capability) func(string) (string, bool) {
	if l, ok := c.(locator); ok {
		return l.Locate
	}
	return nil
}

func (g *guardedFS) endCall() { g.gen.Add(1) }

// serve sends one warden.fs request and decodes its result into reply. A
// denial is kept on the call (so that a failure the plugin then reports is
// a denied call) unless probe says the request only asked.
func (g *guardedFS) serve(req map[string]any, reply any, probe bool) sys.Errno {
	ctx := *g.in.CallCtx.Load()
	state, ok := guest.StateOf(ctx)
	if !ok {
		return sys.EACCES // outside a call (the plugin's start-up): no grants
	}
	if ctx.Err() != nil {
		// Past the deadline or cancelled: do no more work; the meter's
		// watchdog ends the call and classifies it.
		return sys.EINTR
	}
	raw, _ := json.Marshal(req)
	result, err := g.fs.Serve(ctx, state.Call, raw)
	guest.ChargeHost(state, len(raw))
	if err != nil {
		te := guest.AsToolError(err)
		switch te.Kind {
		case tool.KindDenied:
			if !probe {
				state.Denial = te
			}
			return sys.EACCES
		case tool.KindNotFound:
			return sys.ENOENT
		case tool.KindInvalidArguments:
			return sys.EINVAL
		case tool.KindCancelled, tool.KindTimeout:
			return sys.EINTR
		}
		return sys.EIO
	}
	if reply != nil {
		b, err := json.Marshal(result)
		if err != nil || json.Unmarshal(b, reply) != nil {
			return sys.EIO
		}
		if c, ok := reply.(interface{ charged() int }); ok {
			guest.ChargeHost(state, c.charged())
		}
	}
	return 0
}

// wardenPath maps a path under the preopen to warden.fs's form.
func (g *guardedFS) wardenPath(p string) string {
	if p == "" || p == "." {
		return "."
	}
	if g.locate != nil {
		if wp, ok := g.locate("/" + p); ok {
			return wp
		}
	}
	return p
}

func isRoot(p string) bool { return p == "" || p == "." || p == "/" }

// fsStat is a warden.fs stat reply.
type fsStat struct {
	Type    string    `json:"type"`
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"`
	ModTime time.Time `json:"modTime"`
}

func (s *fsStat) stat() wsys.Stat_t {
	perm, _ := strconv.ParseUint(s.Mode, 8, 32)
	mode := fs.FileMode(perm) & fs.ModePerm
	switch s.Type {
	case "dir":
		mode |= fs.ModeDir
	case "symlink":
		mode |= fs.ModeSymlink
	case "other":
		mode |= fs.ModeIrregular
	}
	ns := s.ModTime.UnixNano()
	return wsys.Stat_t{Mode: mode, Nlink: 1, Size: s.Size, Atim: ns, Mtim: ns, Ctim: ns}
}

var rootStat = wsys.Stat_t{Mode: fs.ModeDir | 0o755, Nlink: 1}

func (g *guardedFS) Stat(path string) (wsys.Stat_t, sys.Errno) {
	if isRoot(path) {
		return rootStat, 0
	}
	var st fsStat
	if errno := g.serve(map[string]any{"op": "stat", "path": g.wardenPath(path)}, &st, false); errno != 0 {
		return wsys.Stat_t{}, errno
	}
	return st.stat(), 0
}

// Lstat is Stat: warden.fs follows symlinks, within their root only.
func (g *guardedFS) Lstat(path string) (wsys.Stat_t, sys.Errno) { return g.Stat(path) }

func (g *guardedFS) Mkdir(path string, _ fs.FileMode) sys.Errno {
	if isRoot(path) {
		return sys.EEXIST
	}
	return g.serve(map[string]any{"op": "mkdir", "path": g.wardenPath(path)}, nil, false)
}

func (g *guardedFS) Unlink(path string) sys.Errno {
	if isRoot(path) {
		return sys.EISDIR
	}
	return g.serve(map[string]any{"op": "remove", "path": g.wardenPath(path)}, nil, false)
}

func (g *guardedFS) Rmdir(path string) sys.Errno {
	if isRoot(path) {
		return sys.EPERM
	}
	return g.serve(map[string]any{"op": "remove", "path": g.wardenPath(path)}, nil, false)
}

// fsRead is a warden.fs read reply.
type fsRead struct {
	Content   string `json:"content"`
	Encoding  string `json:"encoding"`
	Truncated bool   `json:"truncated"`
}

func (r *fsRead) charged() int { return len(r.Content) / guest.HostBytesPerFuel }

// load reads the whole file at wp.
func (g *guardedFS) load(wp string) ([]byte, sys.Errno) {
	var r fsRead
	if errno := g.serve(map[string]any{"op": "read", "path": wp}, &r, false); errno != 0 {
		return nil, errno
	}
	if r.Truncated {
		// Over warden.fs's read limit: refuse rather than hand out a prefix
		// the plugin would take for the whole file.
		return nil, sys.EIO
	}
	if r.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(r.Content)
		if err != nil {
			return nil, sys.EIO
		}
		return b, 0
	}
	return []byte(r.Content), 0
}

// store writes (or appends) content to wp.
func (g *guardedFS) store(wp string, content []byte, appending bool) sys.Errno {
	op := "write"
	if appending {
		op = "append"
	}
	req := map[string]any{"op": op, "path": wp, "content": string(content)}
	if !utf8.Valid(content) {
		req["content"], req["encoding"] = base64.StdEncoding.EncodeToString(content), "base64"
	}
	return g.serve(req, nil, false)
}

func (g *guardedFS) OpenFile(path string, flag sys.Oflag, perm fs.FileMode) (sys.File, sys.Errno) {
	write := flag&(sys.O_WRONLY|sys.O_RDWR) != 0
	if !write {
		// Reads go through wazero's adapter of an io/fs.FS (readFS), which
		// supplies seeking and directory listing.
		return g.reads.OpenFile(path, flag, perm)
	}
	if isRoot(path) || flag&sys.O_DIRECTORY != 0 {
		return nil, sys.EISDIR
	}
	wp := g.wardenPath(path)
	if flag&sys.O_EXCL != 0 {
		var st fsStat
		if g.serve(map[string]any{"op": "stat", "path": wp}, &st, true) == 0 {
			return nil, sys.EEXIST
		}
	}
	f := &writeFile{g: g, path: wp, gen: g.gen.Load(), readable: flag&sys.O_RDWR != 0}
	// Create or truncate now, so that a refusal surfaces at open as it
	// would on a real file system.
	switch {
	case flag&sys.O_TRUNC != 0:
		if errno := g.store(wp, nil, false); errno != 0 {
			return nil, errno
		}
	case flag&sys.O_APPEND != 0:
		if errno := g.store(wp, nil, true); errno != 0 {
			return nil, errno
		}
		f.appending = true
	default:
		// Writing without truncating keeps what it does not overwrite.
		content, errno := g.load(wp)
		switch {
		case errno == sys.ENOENT && flag&sys.O_CREAT != 0:
			if errno := g.store(wp, nil, false); errno != 0 {
				return nil, errno
			}
		case errno != 0:
			return nil, errno
		}
		f.buf = content
	}
	return f, 0
}

// writeFile is a file open for writing: its content is kept in memory and
// stored whole (or, opened for appending, the appended bytes) on Sync or
// Close. It cannot seek: Pwrite serves positioned writes.
type writeFile struct {
	sys.UnimplementedFile
	g                   *guardedFS
	path                string
	gen                 uint64
	buf                 []byte
	pos                 int64
	dirty, readable     bool
	appending, released bool
	appended            int // bytes of buf already appended
}

func (f *writeFile) live() sys.Errno {
	if f.released || f.g.gen.Load() != f.gen {
		return sys.EBADF
	}
	return 0
}

func (f *writeFile) IsDir() (bool, sys.Errno) { return false, 0 }
func (f *writeFile) IsAppend() bool           { return f.appending }

func (f *writeFile) SetAppend(enable bool) sys.Errno {
	if enable != f.appending {
		return sys.ENOSYS // a mode warden.fs cannot switch after open
	}
	return 0
}

func (f *writeFile) Stat() (wsys.Stat_t, sys.Errno) {
	if errno := f.live(); errno != 0 {
		return wsys.Stat_t{}, errno
	}
	now := time.Now().UnixNano()
	return wsys.Stat_t{Mode: 0o644, Nlink: 1, Size: int64(len(f.buf)), Atim: now, Mtim: now, Ctim: now}, 0
}

func (f *writeFile) Read(p []byte) (int, sys.Errno) {
	n, errno := f.Pread(p, f.pos)
	f.pos += int64(n)
	return n, errno
}

func (f *writeFile) Pread(p []byte, off int64) (int, sys.Errno) {
	if !f.readable {
		return 0, sys.EBADF
	}
	if errno := f.live(); errno != 0 {
		return 0, errno
	}
	if off < 0 {
		return 0, sys.EINVAL
	}
	if off >= int64(len(f.buf)) {
		return 0, 0
	}
	return copy(p, f.buf[off:]), 0
}

func (f *writeFile) Write(p []byte) (int, sys.Errno) {
	if f.appending {
		f.pos = int64(len(f.buf))
	}
	n, errno := f.Pwrite(p, f.pos)
	f.pos += int64(n)
	return n, errno
}

func (f *writeFile) Pwrite(p []byte, off int64) (int, sys.Errno) {
	if errno := f.live(); errno != 0 {
		return 0, errno
	}
	if off < 0 || (f.appending && off < int64(f.appended)) {
		return 0, sys.EINVAL
	}
	if end := off + int64(len(p)); end > int64(len(f.buf)) {
		if end > guest.MaxMemory {
			return 0, sys.EINVAL
		}
		f.buf = append(f.buf, make([]byte, end-int64(len(f.buf)))...)
	}
	copy(f.buf[off:], p)
	f.dirty = true
	return len(p), 0
}

func (f *writeFile) Truncate(size int64) sys.Errno {
	if errno := f.live(); errno != 0 {
		return errno
	}
	if size < 0 || size > guest.MaxMemory || f.appending && size < int64(len(f.buf)) {
		return sys.EINVAL
	}
	if size <= int64(len(f.buf)) {
		f.buf = f.buf[:size]
	} else {
		f.buf = append(f.buf, make([]byte, size-int64(len(f.buf)))...)
	}
	f.dirty = true
	return 0
}

func (f *writeFile) Sync() sys.Errno {
	if errno := f.live(); errno != 0 || !f.dirty {
		return errno
	}
	var errno sys.Errno
	if f.appending {
		if errno = f.g.store(f.path, f.buf[f.appended:], true); errno == 0 {
			f.appended = len(f.buf)
		}
	} else {
		errno = f.g.store(f.path, f.buf, false)
	}
	if errno == 0 {
		f.dirty = false
	}
	return errno
}

func (f *writeFile) Datasync() sys.Errno { return f.Sync() }

func (f *writeFile) Close() sys.Errno {
	if f.released {
		return 0
	}
	errno := f.Sync()
	f.released, f.buf = true, nil
	if errno == sys.EBADF {
		return 0 // its call has ended: there is no call left to store it for
	}
	return errno
}

// readFS is the read side of a guardedFS as an io/fs.FS: Open stats the
// path and reads a file whole, or returns a directory listed on demand.
type readFS struct{ g *guardedFS }

func (r readFS) Open(name string) (fs.File, error) {
	g := r.g
	if isRoot(name) {
		return &readDir{g: g, path: ".", info: fileInfo{name: ".", mode: fs.ModeDir | 0o755}}, nil
	}
	wp := g.wardenPath(name)
	var st fsStat
	if errno := g.serve(map[string]any{"op": "stat", "path": wp}, &st, false); errno != 0 {
		return nil, errno
	}
	info := fileInfo{name: pathBase(name), size: st.Size, mode: st.stat().Mode, modTime: st.ModTime}
	if st.Type == "dir" {
		return &readDir{g: g, path: wp, gen: g.gen.Load(), info: info}, nil
	}
	content, errno := g.load(wp)
	if errno != 0 {
		return nil, errno
	}
	info.size = int64(len(content))
	return &readFile{g: g, gen: g.gen.Load(), info: info, r: bytes.NewReader(content)}, nil
}

func pathBase(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// readFile is a file's content as read when it was opened.
type readFile struct {
	g    *guardedFS
	gen  uint64
	info fileInfo
	r    *bytes.Reader
}

func (f *readFile) live() error {
	if f.r == nil || f.g.gen.Load() != f.gen {
		return sys.EBADF
	}
	return nil
}

func (f *readFile) Stat() (fs.FileInfo, error) { return f.info, f.live() }

func (f *readFile) Read(p []byte) (int, error) {
	if err := f.live(); err != nil {
		return 0, err
	}
	return f.r.Read(p)
}

func (f *readFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.live(); err != nil {
		return 0, err
	}
	return f.r.ReadAt(p, off)
}

func (f *readFile) Seek(offset int64, whence int) (int64, error) {
	if err := f.live(); err != nil {
		return 0, err
	}
	return f.r.Seek(offset, whence)
}

func (f *readFile) Close() error { f.r = nil; return nil }

// readDir is an open directory, listed through warden.fs on first
// Readdir. The preopen's root is opened when the instance is made and
// lives as long as it; any other directory is closed with its call.
type readDir struct {
	g       *guardedFS
	path    string
	gen     uint64
	info    fileInfo
	entries []fs.FileInfo
	listed  bool
	// listedIn is the call generation the listing was made in: the root,
	// which outlives calls, lists itself again in a later call, under that
	// call's grants.
	listedIn uint64
}

func (d *readDir) live() error {
	if d.path != "." && d.g.gen.Load() != d.gen {
		return sys.EBADF
	}
	return nil
}

func (d *readDir) Stat() (fs.FileInfo, error) { return d.info, d.live() }
func (d *readDir) Read([]byte) (int, error)   { return 0, sys.EISDIR }
func (d *readDir) Close() error               { return nil }

// Readdir is os.File's, which wazero's adapter uses.
func (d *readDir) Readdir(n int) ([]fs.FileInfo, error) {
	if err := d.live(); err != nil {
		return nil, err
	}
	if gen := d.g.gen.Load(); !d.listed || d.listedIn != gen {
		d.listed, d.listedIn, d.entries = false, gen, nil
		var reply struct {
			Entries []struct {
				Name string `json:"name"`
				Type string `json:"type"`
				Size int64  `json:"size"`
			} `json:"entries"`
		}
		if errno := d.g.serve(map[string]any{"op": "list", "path": d.path}, &reply, false); errno != 0 {
			return nil, errno
		}
		for _, e := range reply.Entries {
			st := fsStat{Type: e.Type, Mode: "0644"}
			if e.Type == "dir" {
				st.Mode = "0755"
			}
			d.entries = append(d.entries, fileInfo{name: e.Name, size: e.Size, mode: st.stat().Mode})
		}
		d.listed = true
	}
	rest := d.entries
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	d.entries = d.entries[len(rest):]
	if n > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	return rest, nil
}

// fileInfo is an fs.FileInfo built from warden.fs replies.
type fileInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return i.modTime }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return nil }
