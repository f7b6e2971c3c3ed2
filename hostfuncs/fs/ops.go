package fs

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/warden-run/warden/hostfuncs/internal/pathguard"
	"github.com/warden-run/warden/tool"
)

// ReadReply is the result of a read.
type ReadReply struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Encoding is "base64" when the content is not UTF-8 text; absent otherwise.
	Encoding string `json:"encoding,omitempty"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Offset is the line the content starts at (0-based); Lines how many
	// lines (complete or cut) it holds.
	Offset int64 `json:"offset"`
	Lines  int64 `json:"lines"`
	// Truncated says a byte limit cut the content.
	Truncated bool `json:"truncated,omitempty"`
	// NextOffset, when present, is the offset that continues the read.
	NextOffset *int64 `json:"nextOffset,omitempty"`
}

// openRegular opens a regular file for reading without blocking on FIFOs,
// and checks the type of what it actually opened.
func openRegular(op string, root *os.Root, t pathguard.Target) (*os.File, os.FileInfo, error) {
	f, err := root.OpenFile(t.Rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fileError(op, t, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fileError(op, t, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, nil, invalid("%s %q: is a directory; use op list", op, t.Path())
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, invalid("%s %q: not a regular file", op, t.Path())
	}
	return f, fi, nil
}

func (o *opCall) read() (any, error) {
	const op = "read"
	t, root, err := o.gate(op, pathguard.Read, o.req.Path, true)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, fi, err := openRegular(op, root, t)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := o.verifyOpened(op, pathguard.Read, t, f); err != nil {
		return nil, err
	}
	maxBytes := lower(o.req.MaxBytes, o.st.limits.MaxReadBytes)
	reply := &ReadReply{Path: t.Path(), Size: fi.Size()}
	if o.req.Offset == nil && o.req.Limit <= 0 {
		err = o.readWhole(f, maxBytes, reply)
	} else {
		offset := int64(0)
		if o.req.Offset != nil {
			offset = *o.req.Offset
		}
		if offset < 0 || o.req.Limit < 0 {
			return nil, invalid("read %q: offset and limit must not be negative", t.Path())
		}
		err = o.readLines(f, offset, int64(o.req.Limit), maxBytes, reply)
	}
	if err != nil {
		return nil, fileError(op, t, err)
	}
	return reply, nil
}

// readWhole reads from the start up to maxBytes. Text is cut after the last
// complete line that fits, so that nextOffset continues it exactly.
func (o *opCall) readWhole(f *os.File, maxBytes int64, reply *ReadReply) error {
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return err
	}
	more := int64(len(data)) > maxBytes
	if more {
		data = data[:maxBytes]
	}
	if !utf8.Valid(data) && !(more && utf8.Valid(trimPartialRune(data))) {
		reply.Content = base64.StdEncoding.EncodeToString(data)
		reply.Encoding = "base64"
		reply.Truncated = more
		return nil
	}
	if more {
		reply.Truncated = true
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			data = data[:i+1]
		} else {
			data = trimPartialRune(data)
		}
	}
	reply.Content = string(data)
	reply.Lines = int64(bytes.Count(data, []byte{'\n'}))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		reply.Lines++
	}
	if more {
		next := int64(bytes.Count(data, []byte{'\n'}))
		if next == 0 {
			// A single line longer than the limit: skip past it.
			next = 1
		}
		reply.NextOffset = &next
	}
	return nil
}

// trimPartialRune drops an incomplete UTF-8 sequence that a byte limit left
// at the end of data.
func trimPartialRune(data []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(data); i++ {
		if utf8.RuneStart(data[len(data)-i]) {
			if !utf8.FullRune(data[len(data)-i:]) {
				return data[:len(data)-i]
			}
			break
		}
	}
	return data
}

// readLines returns up to limit lines (0: as many as fit) after skipping
// offset lines.
func (o *opCall) readLines(f *os.File, offset, limit, maxBytes int64, reply *ReadReply) error {
	br := bufio.NewReaderSize(f, 64<<10)
	reply.Offset = offset
	for line := int64(0); line < offset; line++ {
		if line%4096 == 0 {
			if err := o.cancelled(); err != nil {
				return err
			}
		}
		if _, _, _, err := readLine(br, 0); err != nil {
			if err == io.EOF {
				reply.Content = ""
				return nil
			}
			return err
		}
	}
	var out []byte
	for limit <= 0 || reply.Lines < limit {
		room := maxBytes - int64(len(out))
		if room <= 0 {
			reply.Truncated = true
			break
		}
		line, _, complete, err := readLine(br, room)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if !complete && reply.Lines > 0 {
			// Keep whole lines only; the cut one starts the next read.
			reply.Truncated = true
			next := offset + reply.Lines
			reply.NextOffset = &next
			reply.Content = string(out)
			return nil
		}
		out = append(out, line...)
		reply.Lines++
		if !complete {
			reply.Truncated = true
			out = trimPartialRune(out)
			break
		}
		if reply.Lines%4096 == 0 {
			if err := o.cancelled(); err != nil {
				return err
			}
		}
	}
	if _, err := br.Peek(1); err == nil {
		next := offset + reply.Lines
		reply.NextOffset = &next
	}
	if !utf8.Valid(out) {
		reply.Content = base64.StdEncoding.EncodeToString(out)
		reply.Encoding = "base64"
		return nil
	}
	reply.Content = string(out)
	return nil
}

// readLine reads one line including its newline and keeps at most keep
// bytes of it, discarding the rest; n counts every byte consumed. complete
// is false when bytes were discarded. It returns io.EOF only when nothing was left to read.
func readLine(br *bufio.Reader, keep int64) (line []byte, n int64, complete bool, err error) {
	complete = true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			n += int64(len(chunk))
			if room := keep - int64(len(line)); room > 0 {
				line = append(line, chunk[:min(int64(len(chunk)), room)]...)
				if int64(len(chunk)) > room {
					complete = false
				}
			} else if keep > 0 {
				complete = false
			}
		}
		switch {
		case err == nil:
			return line, n, complete, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && n > 0:
			return line, n, complete, nil
		default:
			return line, n, complete, err
		}
	}
}

// Entry is one directory entry in a list reply.
type Entry struct {
	Name string `json:"name"`
	// Type is "file", "dir", "symlink" or "other". A symlink is not followed.
	Type string `json:"type"`
	Size int64  `json:"size,omitempty"`
}

// ListReply is the result of a list.
type ListReply struct {
	Path    string  `json:"path"`
	Entries []Entry `json:"entries"`
	// Truncated says the directory has more entries than were returned.
	Truncated bool `json:"truncated,omitempty"`
}

func typeName(m iofs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&iofs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

func (o *opCall) list() (any, error) {
	const op = "list"
	p := o.req.Path
	if p == "" {
		p = "."
	}
	t, root, err := o.gate(op, pathguard.Read, p, true)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	d, err := root.Open(t.Rel)
	if err != nil {
		return nil, fileError(op, t, err)
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return nil, fileError(op, t, err)
	}
	if !fi.IsDir() {
		return nil, invalid("list %q: not a directory", t.Path())
	}
	if err := o.verifyOpened(op, pathguard.Read, t, d); err != nil {
		return nil, err
	}
	limit := lower(o.req.Limit, o.st.limits.MaxListEntries)
	reply := &ListReply{Path: t.Path(), Entries: []Entry{}}
	for {
		if err := o.cancelled(); err != nil {
			return nil, err
		}
		batch, err := d.ReadDir(256)
		for _, e := range batch {
			// Deny-listed entries are left out as if they did not exist.
			if o.st.guard.Denied(t.Join(e.Name())) != nil {
				continue
			}
			if len(reply.Entries) == limit {
				reply.Truncated = true
				break
			}
			entry := Entry{Name: e.Name(), Type: typeName(e.Type())}
			if e.Type().IsRegular() {
				if info, err := e.Info(); err == nil {
					entry.Size = info.Size()
				}
			}
			reply.Entries = append(reply.Entries, entry)
		}
		if reply.Truncated || err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return nil, fileError(op, t, err)
		}
	}
	slices.SortFunc(reply.Entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return reply, nil
}

// StatReply is the result of a stat.
type StatReply struct {
	Path string `json:"path"`
	// Type is the type of what the path leads to: "file", "dir" or "other".
	Type string `json:"type"`
	Size int64  `json:"size"`
	// Mode is the permission bits in octal, e.g. "0644".
	Mode    string `json:"mode"`
	ModTime string `json:"modTime"` // RFC 3339
	// Symlink says the path itself is a symbolic link (followed for the rest).
	Symlink bool `json:"symlink,omitempty"`
}

func (o *opCall) stat() (any, error) {
	const op = "stat"
	t, root, err := o.gate(op, pathguard.Read, o.req.Path, true)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Stat(t.Rel)
	if err != nil {
		return nil, fileError(op, t, err)
	}
	lfi, err := root.Lstat(t.Rel)
	if err != nil {
		return nil, fileError(op, t, err)
	}
	return &StatReply{
		Path:    t.Path(),
		Type:    typeName(fi.Mode()),
		Size:    fi.Size(),
		Mode:    "0" + strings.TrimLeft(octal(fi.Mode().Perm()), "0"),
		ModTime: fi.ModTime().UTC().Format(time.RFC3339),
		Symlink: lfi.Mode()&iofs.ModeSymlink != 0,
	}, nil
}

func octal(m iofs.FileMode) string {
	const digits = "01234567"
	return string([]byte{digits[(m>>6)&7], digits[(m>>3)&7], digits[m&7]})
}

// WriteReply is the result of a write or an append.
type WriteReply struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

func (o *opCall) write(appending bool) (any, error) {
	op := "write"
	// Truncation waits until the opened file has passed verifyOpened.
	flags := os.O_WRONLY | os.O_CREATE
	if appending {
		op, flags = "append", os.O_WRONLY|os.O_CREATE|os.O_APPEND
	}
	var data []byte
	switch o.req.Encoding {
	case "", "utf-8":
		data = []byte(o.req.Content)
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(o.req.Content); err != nil {
			return nil, invalid("%s %q: content is not valid base64: %v", op, o.req.Path, err)
		}
	default:
		return nil, invalid("%s %q: encoding %q: must be \"utf-8\" or \"base64\"", op, o.req.Path, o.req.Encoding)
	}
	if int64(len(data)) > o.st.limits.MaxWriteBytes {
		return nil, invalid("%s %q: content is %d bytes; the limit is %d", op, o.req.Path, len(data), o.st.limits.MaxWriteBytes)
	}
	t, root, err := o.gate(op, pathguard.Write, o.req.Path, true)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if t.Rel == "." {
		return nil, invalid("%s %q: is a directory", op, t.Path())
	}
	// O_NONBLOCK: opening a FIFO without a reader fails instead of hanging.
	f, err := root.OpenFile(t.Rel, flags|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		if errors.Is(err, syscall.EISDIR) {
			return nil, invalid("%s %q: is a directory", op, t.Path())
		}
		return nil, fileError(op, t, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, invalid("%s %q: not a regular file", op, t.Path())
	}
	if err := o.verifyOpened(op, pathguard.Write, t, f); err != nil {
		return nil, err
	}
	if !appending {
		if err := f.Truncate(0); err != nil {
			return nil, fileError(op, t, err)
		}
	}
	if _, err := f.Write(data); err != nil {
		return nil, fileError(op, t, err)
	}
	if err := f.Close(); err != nil {
		return nil, fileError(op, t, err)
	}
	return &WriteReply{Path: t.Path(), Bytes: len(data)}, nil
}

// PathReply is the result of mkdir and remove.
type PathReply struct {
	Path string `json:"path"`
}

func (o *opCall) mkdir() (any, error) {
	const op = "mkdir"
	t, root, err := o.gate(op, pathguard.Write, o.req.Path, true)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if err := root.MkdirAll(t.Rel, 0o755); err != nil {
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, iofs.ErrExist) {
			return nil, tool.Errorf(tool.KindFailed, "mkdir %q: a file is in the way", t.Path())
		}
		return nil, fileError(op, t, err)
	}
	return &PathReply{Path: t.Path()}, nil
}

func (o *opCall) remove() (any, error) {
	const op = "remove"
	// The last component is not followed: remove deletes a symlink, not
	// what it points to.
	t, root, err := o.gate(op, pathguard.Write, o.req.Path, false)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if t.Rel == "." {
		return nil, invalid("remove %q: cannot remove a root", t.Path())
	}
	fi, err := root.Lstat(t.Rel)
	if err != nil {
		return nil, fileError(op, t, err)
	}
	if !fi.IsDir() || !o.req.Recursive {
		if err := root.Remove(t.Rel); err != nil {
			if fi.IsDir() && errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
				return nil, tool.Errorf(tool.KindFailed, "remove %q: directory not empty; set \"recursive\": true", t.Path())
			}
			return nil, fileError(op, t, err)
		}
		return &PathReply{Path: t.Path()}, nil
	}
	// A recursive remove must not delete deny-listed files, which the tool
	// could not have written either: refuse the whole removal.
	sub, err := root.OpenRoot(t.Rel)
	if err != nil {
		return nil, fileError(op, t, err)
	}
	defer sub.Close()
	visited := 0
	err = iofs.WalkDir(sub.FS(), ".", func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if visited++; visited > o.st.limits.MaxWalkEntries {
			return tool.Errorf(tool.KindFailed, "remove %q: more than %d entries; remove it in parts", t.Path(), o.st.limits.MaxWalkEntries)
		}
		if visited%1024 == 0 {
			if err := o.cancelled(); err != nil {
				return err
			}
		}
		if rule := o.st.guard.Denied(t.Join(p)); rule != nil {
			// The entry is not named: listings hide denied entries too.
			return tool.Errorf(tool.KindDenied, "remove %q: contains an entry that is denied (%s); deny rules always win over grants",
				t.Path(), rule.Reason())
		}
		return nil
	})
	if err != nil {
		var te *tool.Error
		if errors.As(err, &te) {
			return nil, te
		}
		return nil, fileError(op, t, err)
	}
	if err := root.RemoveAll(t.Rel); err != nil {
		return nil, fileError(op, t, err)
	}
	return &PathReply{Path: t.Path()}, nil
}
