package codecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The index records every compiled entry warden saw wazero write: its path
// relative to the cache dir, its size, its sha256 and the file's stamp when
// it was hashed (see stamp). It is text, one entry a line, so a person can
// read it, and it ends with the sha256 of everything before that line, which
// detects a torn or corrupted write.
//
//	warden-codecache 1
//	wazero-v1.12.0-amd64-linux/<64 hex> <size> <sha256 hex> <dev>:<ino>:<mtime ns>:<ctime ns>
//	sum <sha256 hex of the lines above, newlines included>
const indexHeader = "warden-codecache 1\n"

// Bounds on what decodeIndex accepts: far beyond any real cache (an entry is
// one compiled module), small enough that a hostile file cannot make warden
// allocate much.
const (
	maxIndexBytes   = 16 << 20
	maxIndexEntries = 1 << 16
)

// entry is what the index knows of one compiled entry.
type entry struct {
	size   int64
	sha256 [sha256.Size]byte
	stamp  stamp
}

// stamp identifies one version of a file without reading it: a write
// changes its ctime, which, unlike mtime, no unprivileged call can set
// back. An entry whose stamp is unchanged since it was hashed has its
// hashed bytes.
type stamp struct {
	dev, ino       uint64
	mtimeNs, ctime int64
}

func (s stamp) String() string {
	return fmt.Sprintf("%d:%d:%d:%d", s.dev, s.ino, s.mtimeNs, s.ctime)
}

func parseStamp(f string) (stamp, error) {
	parts := strings.Split(f, ":")
	if len(parts) != 4 {
		return stamp{}, fmt.Errorf("stamp %q is not dev:ino:mtime:ctime", f)
	}
	var s stamp
	var err error
	if s.dev, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
		return stamp{}, fmt.Errorf("stamp %q: dev: %w", f, err)
	}
	if s.ino, err = strconv.ParseUint(parts[1], 10, 64); err != nil {
		return stamp{}, fmt.Errorf("stamp %q: ino: %w", f, err)
	}
	if s.mtimeNs, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
		return stamp{}, fmt.Errorf("stamp %q: mtime: %w", f, err)
	}
	if s.ctime, err = strconv.ParseInt(parts[3], 10, 64); err != nil {
		return stamp{}, fmt.Errorf("stamp %q: ctime: %w", f, err)
	}
	if s.String() != f {
		return stamp{}, fmt.Errorf("stamp %q is not in canonical form", f)
	}
	return s, nil
}

// encodeIndex renders entries in the order of their names, so that equal
// indexes are equal files.
func encodeIndex(entries map[string]entry) []byte {
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	slices.Sort(names)
	var b bytes.Buffer
	b.WriteString(indexHeader)
	for _, name := range names {
		e := entries[name]
		fmt.Fprintf(&b, "%s %d %s %s\n", name, e.size, hex.EncodeToString(e.sha256[:]), e.stamp)
	}
	sum := sha256.Sum256(b.Bytes())
	fmt.Fprintf(&b, "sum %s\n", hex.EncodeToString(sum[:]))
	return b.Bytes()
}

// decodeIndex parses an index written by encodeIndex. Anything else, a
// single byte changed included, is an error saying what is wrong and on
// which line: the caller then treats every entry as unknown.
func decodeIndex(data []byte) (map[string]entry, error) {
	if len(data) > maxIndexBytes {
		return nil, fmt.Errorf("index is %d bytes, over the %d allowed", len(data), maxIndexBytes)
	}
	if !bytes.HasPrefix(data, []byte(indexHeader)) {
		return nil, errors.New("line 1: not a warden-codecache 1 index")
	}
	// The checksum line is the last one; it covers every byte before it.
	body, last, ok := cutLastLine(data)
	if !ok {
		return nil, errors.New("no checksum line at the end (truncated?)")
	}
	sumHex, ok := strings.CutPrefix(last, "sum ")
	if !ok {
		return nil, errors.New("no checksum line at the end (truncated?)")
	}
	want, err := decodeSHA(sumHex)
	if err != nil {
		return nil, fmt.Errorf("checksum line: %w", err)
	}
	if sha256.Sum256(body) != want {
		return nil, errors.New("checksum does not match the contents")
	}
	lines := strings.Split(strings.TrimSuffix(string(body[len(indexHeader):]), "\n"), "\n")
	if len(body) == len(indexHeader) {
		lines = nil
	}
	if len(lines) > maxIndexEntries {
		return nil, fmt.Errorf("%d entries, over the %d allowed", len(lines), maxIndexEntries)
	}
	entries := make(map[string]entry, len(lines))
	var prev string
	for i, line := range lines {
		name, e, err := decodeLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+2, err)
		}
		if _, dup := entries[name]; dup {
			return nil, fmt.Errorf("line %d: %s listed twice", i+2, name)
		}
		if i > 0 && name < prev {
			return nil, fmt.Errorf("line %d: %s is out of order (entries are sorted)", i+2, name)
		}
		prev = name
		entries[name] = e
	}
	return entries, nil
}

// cutLastLine splits data into everything up to and including the
// second-to-last newline, and the last line without its newline.
func cutLastLine(data []byte) (body []byte, last string, ok bool) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, "", false
	}
	i := bytes.LastIndexByte(data[:len(data)-1], '\n')
	if i < 0 {
		return nil, "", false
	}
	return data[:i+1], string(data[i+1 : len(data)-1]), true
}

func decodeLine(line string) (string, entry, error) {
	fields := strings.Split(line, " ")
	if len(fields) != 4 {
		return "", entry{}, fmt.Errorf("want \"<entry> <size> <sha256> <stamp>\", got %d fields", len(fields))
	}
	name := fields[0]
	if !validName(name) {
		return "", entry{}, fmt.Errorf("entry name %q is not wazero-<version>/<64 hex digits>", name)
	}
	size, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != fields[1] {
		return "", entry{}, fmt.Errorf("size %q is not a non-negative decimal", fields[1])
	}
	sum, err := decodeSHA(fields[2])
	if err != nil {
		return "", entry{}, err
	}
	st, err := parseStamp(fields[3])
	if err != nil {
		return "", entry{}, err
	}
	return name, entry{size: size, sha256: sum, stamp: st}, nil
}

func decodeSHA(s string) (sum [sha256.Size]byte, err error) {
	if len(s) != 2*sha256.Size || !isLowerHex(s) {
		return sum, fmt.Errorf("%q is not 64 lowercase hex digits", s)
	}
	hex.Decode(sum[:], []byte(s))
	return sum, nil
}

// validName accepts exactly the names wazero gives entries: a version
// directory and a key in hex. Nothing in it can climb out of the cache dir.
func validName(name string) bool {
	sub, key, ok := strings.Cut(name, "/")
	return ok && validSubdir(sub) && len(key) == 2*sha256.Size && isLowerHex(key)
}

// validSubdir accepts wazero's "wazero-<version>-<arch>-<os>" names.
func validSubdir(sub string) bool {
	rest, ok := strings.CutPrefix(sub, "wazero-")
	if !ok || rest == "" || len(sub) > 200 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._+-", c)) {
			return false
		}
	}
	return true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
