package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// Store keeps manifests by load key: in a directory, or in memory only when
// the directory is "" (cache_dir: off). It is safe for concurrent use.
type Store struct {
	dir string
	log *slog.Logger
	mu  sync.Mutex
	mem map[string][]byte // encoded manifests, when dir is ""
	// used hears of every manifest read (wrote false) or written (true)
	// on disk, for the cache's least-recently-used pruning; nil hears
	// nothing.
	used func(path string, wrote bool)
}

// Observe has used hear of every manifest the store reads or writes on
// disk. It is called before the store is used.
func (s *Store) Observe(used func(path string, wrote bool)) { s.used = used }

// NewStore returns a store in dir ("" = memory only). The directory is made
// on the first Put.
func NewStore(dir string, log *slog.Logger) *Store {
	return &Store{dir: dir, log: log, mem: make(map[string][]byte)}
}

// Dir is the directory manifests are kept in, "" when in memory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(key string) string { return filepath.Join(s.dir, key+".manifest") }

// Get returns the manifest stored under key for a module whose bytes hash
// to moduleSHA, or false. An entry that does not decode, or was made for
// other bytes or another key, is logged (naming the file), deleted and
// reported as a miss: it is never served.
func (s *Store) Get(key, moduleSHA string) (*Manifest, bool) {
	if !isHex256(key) {
		return nil, false
	}
	data, err := s.read(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	var m *Manifest
	if err == nil {
		m, err = Decode(data)
	}
	if err == nil && m.Key != key {
		err = fmt.Errorf("manifest was made for key %s…, stored under %s…", m.Key[:12], key[:12])
	}
	if err == nil && m.ModuleSHA256 != moduleSHA {
		err = fmt.Errorf("manifest describes module %s…, the module is %s…", m.ModuleSHA256[:12], moduleSHA[:12])
	}
	if err != nil {
		s.log.Warn("descriptor manifest refused; deleted, the module is loaded again", "file", s.where(key), "error", err)
		s.Delete(key)
		return nil, false
	}
	if s.used != nil && s.dir != "" {
		s.used(s.path(key), false)
	}
	return m, true
}

func (s *Store) where(key string) string {
	if s.dir == "" {
		return "(memory)/" + key + ".manifest"
	}
	return s.path(key)
}

func (s *Store) read(key string) ([]byte, error) {
	if s.dir == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		data, ok := s.mem[key]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return data, nil
	}
	f, err := os.Open(s.path(key))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read one byte past the limit, so that an oversized file is refused
	// without reading it all.
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	return data, nil
}

// Put stores m under m.Key, replacing any entry. On disk the file is written
// whole and renamed into place, so that a reader never sees half of it.
func (s *Store) Put(m *Manifest) error {
	data, err := Encode(m)
	if err != nil {
		return err
	}
	if s.dir == "" {
		s.mu.Lock()
		s.mem[m.Key] = data
		s.mu.Unlock()
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("manifest dir: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, m.Key+".*.tmp")
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("manifest %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), s.path(m.Key)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("manifest: %w", err)
	}
	if s.used != nil {
		s.used(s.path(m.Key), true)
	}
	return nil
}

// Delete removes the entry under key, if any.
func (s *Store) Delete(key string) {
	if !isHex256(key) {
		return
	}
	if s.dir == "" {
		s.mu.Lock()
		delete(s.mem, key)
		s.mu.Unlock()
		return
	}
	if err := os.Remove(s.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("cannot delete a descriptor manifest", "file", s.path(key), "error", err)
	}
}

// Path returns the file key is stored in ("" in memory), for tests and
// diagnostics.
func (s *Store) Path(key string) string {
	if s.dir == "" {
		return ""
	}
	return s.path(key)
}

// Corrupt replaces the stored bytes of key with f(bytes), for tests of a
// damaged cache in memory mode. On disk, tests edit the file.
func (s *Store) Corrupt(key string, f func([]byte) []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.mem[key]; ok {
		s.mem[key] = f(append([]byte(nil), d...))
	}
}
