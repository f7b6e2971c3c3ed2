package codecache

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero"
)

// wazeroFiles is the method set of wazero's internal filecache.Cache, the
// directory of compiled entries behind a CompilationCache made by
// wazero.NewCompilationCacheWithDir.
type wazeroFiles interface {
	Get(key [32]byte) (content io.ReadCloser, ok bool, err error)
	Add(key [32]byte, content io.Reader) error
	Delete(key [32]byte) error
}

// Observe makes cc, made by wazero.NewCompilationCacheWithDir(dir) for the
// guard's dir, report the compiled entries wazero reads and writes to the
// guard (Touch, Wrote): without it, the least recently used entry would be
// the least recently compiled one. It must be called before cc serves a
// runtime. wazero offers no hook there, so Observe wraps the cache's
// unexported file cache field (RATIONALE.md, "Observing wazero's compiled
// entries"); when wazero's structure is not the one Observe knows, it
// changes nothing and says so (TestObserveKnowsWazero fails then).
func (g *Guard) Observe(cc wazero.CompilationCache) error {
	v := reflect.ValueOf(cc)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("compilation cache is a %T, not wazero's", cc)
	}
	field := v.Elem().FieldByName("fileCache")
	if !field.IsValid() || field.Kind() != reflect.Interface {
		return errors.New("wazero's compilation cache has no fileCache interface field")
	}
	slot := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem()
	inner, ok := slot.Interface().(wazeroFiles)
	if !ok || inner == nil {
		return errors.New("wazero's file cache does not have the methods warden knows")
	}
	dirPath := reflect.ValueOf(inner)
	if dirPath.Kind() == reflect.Pointer {
		dirPath = dirPath.Elem()
	}
	if dirPath.Kind() == reflect.Struct {
		dirPath = dirPath.FieldByName("dirPath")
	}
	if !dirPath.IsValid() || dirPath.Kind() != reflect.String {
		return errors.New("wazero's file cache has no dirPath")
	}
	sub := filepath.Base(dirPath.String())
	if !validSubdir(sub) {
		return fmt.Errorf("wazero's file cache dir %q is not a wazero version directory", sub)
	}
	o := &observedFiles{inner: inner, g: g, sub: sub, dir: filepath.Join(g.dir, sub), vouched: make(map[[32]byte]int)}
	if !reflect.TypeOf(o).AssignableTo(field.Type()) {
		return errors.New("wazero's file cache interface has other methods than warden knows")
	}
	slot.Set(reflect.ValueOf(o))
	g.mu.Lock()
	g.files = o
	g.mu.Unlock()
	return nil
}

// observedFiles is wazero's file cache, reporting to the guard.
type observedFiles struct {
	inner wazeroFiles
	g     *Guard
	// sub is wazero's version dir, dir its path.
	sub, dir string
	// vouched counts the verified compiles (CompileVerified) in flight for
	// a key: a miss or a deletion of it is refused meanwhile.
	mu      sync.Mutex
	vouched map[[32]byte]int
}

// vouch marks key as under a verified compile, or no longer.
func (o *observedFiles) vouch(key [32]byte, on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if on {
		o.vouched[key]++
	} else if o.vouched[key]--; o.vouched[key] <= 0 {
		delete(o.vouched, key)
	}
}

func (o *observedFiles) isVouched(key [32]byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.vouched[key] > 0
}

func (o *observedFiles) path(key [32]byte) string {
	return filepath.Join(o.dir, hex.EncodeToString(key[:]))
}

func (o *observedFiles) Get(key [32]byte) (io.ReadCloser, bool, error) {
	content, ok, err := o.inner.Get(key)
	if ok && err == nil {
		o.g.Touch(o.path(key))
	}
	if !ok && err == nil && o.isVouched(key) {
		return nil, false, errUnvouched
	}
	return content, ok, err
}

func (o *observedFiles) Add(key [32]byte, content io.Reader) error {
	err := o.inner.Add(key, content)
	if err == nil {
		o.g.Wrote(o.path(key))
	}
	return err
}

// Delete deletes key's entry (wazero deletes one a version of its own
// wrote); under a verified compile the compile must then fail rather than
// compile afresh.
func (o *observedFiles) Delete(key [32]byte) error {
	err := o.inner.Delete(key)
	if o.isVouched(key) {
		return errUnvouched
	}
	return err
}
