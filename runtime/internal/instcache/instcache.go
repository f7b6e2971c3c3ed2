// Package instcache keeps the instrumentation pass's output on disk, so
// that a module loaded again (a restart, a module back after an idle
// release) skips the pass: about a third of a warm load of a 5 MB Go guest.
//
// A file is untrusted input. It is only ever read whole, it carries the key
// it was written under and a CRC-32C of everything before it, and anything
// that does not decode exactly (another key, a flipped byte, a truncation,
// bytes past the end) is logged, deleted and rebuilt, never served. Memory
// safety never rests on this file: wazero validates whatever it compiles,
// and a compile that skips validation (codecache.CompileVerified) does so
// only for bytes whose own digest names an entry wazero wrote after
// validating them. What the checksum guards is the metering the pass
// inserted, against damage: a disk error, a torn write. It is a CRC, not a
// sha256, because no checksum stored beside the data stops whoever can
// write the file (they can write the checksum too; that is the directory's
// job, which runtime/internal/codecache requires to be the user's own and
// not writable by others), and a sha256 of the megabytes of a module cost a
// warm first call 5 ms where a CRC-32C costs a fraction of one.
package instcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/warden-run/warden/runtime/internal/instrument"
)

// Version changes whenever the pass's output for the same input and
// Config may change: it is part of every key. TestVersionCoversThePass
// fails when the output changes and Version does not.
const Version = 4

const magic = "warden-instrumented 2\n"

// maxFile bounds what Get reads: far above any module warden loads.
const maxFile = 1 << 28

// castagnoli is the CRC-32C table (hardware-assisted on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcSize is the checksum's length at the end of a file.
const crcSize = 4

// Store is a directory of instrumentation results. A nil *Store keeps
// nothing.
type Store struct {
	dir string
	log *slog.Logger
	// Lookups, for warden_compile_cache_total.
	hits, misses, errs atomic.Uint64
	// used hears of every entry read (wrote false) or written (true), for
	// the cache's least-recently-used pruning; nil hears nothing.
	used func(path string, wrote bool)
}

// Observe has used hear of every entry the store reads or writes. It is
// called before the store is used.
func (s *Store) Observe(used func(path string, wrote bool)) {
	if s != nil {
		s.used = used
	}
}

// New returns a store in dir, or nil when dir is "".
func New(dir string, log *slog.Logger) *Store {
	if dir == "" {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{dir: dir, log: log}
}

// Key names the output of the pass with cfg over a module: moduleSHA256 is
// the digest of the module's bytes as loaded, and loader names every edit
// the loader makes before the pass (the edits are a function of the bytes).
func Key(moduleSHA256, loader string, cfg instrument.Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s%d\n%s\n%s\n%#v\n", magic, Version, moduleSHA256, loader, cfg)
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Store) path(key string) string { return filepath.Join(s.dir, key+".wasm") }

// Get returns the result stored under key. A file that is not exactly what
// Put wrote under that key is deleted (and reported) and Get misses.
func (s *Store) Get(key string) (*instrument.Result, bool) {
	if s == nil {
		return nil, false
	}
	res, ok := s.get(key)
	if ok {
		s.hits.Add(1)
		if s.used != nil {
			s.used(s.path(key), false)
		}
	}
	return res, ok
}

// Stats returns the lookups so far: hits, misses (no entry) and errors
// (an entry that could not be used, or a Put that could not write).
func (s *Store) Stats() (hits, misses, errs uint64) {
	if s == nil {
		return 0, 0, 0
	}
	return s.hits.Load(), s.misses.Load(), s.errs.Load()
}

func (s *Store) get(key string) (*instrument.Result, bool) {
	path := s.path(key)
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.misses.Add(1)
		return nil, false
	}
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxFile {
		s.drop(path, "not a regular file of a sane size")
		return nil, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		s.drop(path, err.Error())
		return nil, false
	}
	res, err := Decode(key, data)
	if err != nil {
		s.drop(path, err.Error())
		return nil, false
	}
	return res, true
}

// Put stores res under key. A store that cannot be written costs the next
// load the pass, nothing else: the failure is logged.
func (s *Store) Put(key string, res *instrument.Result) {
	if s == nil {
		return
	}
	data, err := Encode(key, res)
	if err == nil {
		err = os.MkdirAll(s.dir, 0o700)
	}
	if err == nil {
		err = writeAtomic(s.path(key), data)
	}
	if err != nil {
		s.errs.Add(1)
		s.log.Warn("instrumented module not cached", "dir", s.dir, "error", err)
	} else if s.used != nil {
		s.used(s.path(key), true)
	}
}

func (s *Store) drop(path, why string) {
	s.errs.Add(1)
	s.log.Warn("instrumented module cache entry removed; it will be rebuilt", "file", path, "reason", why)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("instrumented module cache entry could not be removed", "file", path, "error", err)
	}
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Encode renders res under key: the magic, the key, the length-prefixed
// JSON of res without its bytes, the length-prefixed bytes, and the
// CRC-32C (Castagnoli) of all of that, little-endian.
func Encode(key string, res *instrument.Result) ([]byte, error) {
	meta := *res
	meta.Wasm = nil
	js, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(magic)
	b.WriteString(key)
	b.WriteByte('\n')
	b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(js))))
	b.Write(js)
	b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(res.Wasm))))
	b.Write(res.Wasm)
	b.Write(binary.LittleEndian.AppendUint32(nil, crc32.Checksum(b.Bytes(), castagnoli)))
	return b.Bytes(), nil
}

// Decode parses what Encode wrote under key, and nothing else. The result's
// Wasm is a slice of data.
func Decode(key string, data []byte) (*instrument.Result, error) {
	if len(data) > maxFile {
		return nil, fmt.Errorf("%d bytes, over the %d allowed", len(data), maxFile)
	}
	if len(data) < crcSize {
		return nil, errors.New("truncated: no checksum")
	}
	body, sum := data[:len(data)-crcSize], data[len(data)-crcSize:]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(sum) {
		return nil, errors.New("checksum does not match the contents")
	}
	rest, ok := bytes.CutPrefix(body, []byte(magic))
	if !ok {
		return nil, errors.New("not a warden instrumented module (magic)")
	}
	header := key + "\n"
	if rest, ok = bytes.CutPrefix(rest, []byte(header)); !ok {
		return nil, errors.New("written under another key")
	}
	js, rest, err := lengthPrefixed(rest, "metadata")
	if err != nil {
		return nil, err
	}
	wasm, rest, err := lengthPrefixed(rest, "module")
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d bytes after the module", len(rest))
	}
	var res instrument.Result
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if dec.More() {
		return nil, errors.New("metadata: trailing data")
	}
	if res.Wasm != nil {
		return nil, errors.New("metadata carries module bytes")
	}
	// The module bytes stay in data, the file just read (a few bytes of
	// header and checksum around them): no copy of a module of megabytes.
	res.Wasm = wasm[:len(wasm):len(wasm)]
	return &res, nil
}

func lengthPrefixed(b []byte, what string) (field, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("truncated before the %s length", what)
	}
	n := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b)) {
		return nil, nil, fmt.Errorf("%s length %d is past the end (%d bytes left)", what, n, len(b))
	}
	return b[:n], b[n:], nil
}
