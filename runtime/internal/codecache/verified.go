package codecache

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// A warm load's compile. wazero's CompileModule decodes and validates every
// function body of a module before it looks for its compiled code in the
// file cache: for a 7 MB instrumented Go guest that is two thirds of a
// warm first call (docs/performance.md), spent proving again what was
// proved when the entry was written. An entry's key is wazero's digest of
// the module's bytes, and wazero writes an entry only for bytes it
// validated; the guard vouches that the entry on disk is the one wazero
// wrote (its index, checked at every load's Begin). So when the guard
// holds the entry for these exact bytes, CompileVerified compiles them the
// way CompileModule does but without validating them again. It reaches
// into wazero for that (RATIONALE.md, "A warm compile without validating
// again"); every step checks the shape it relies on and, if wazero is not
// the one it knows, CompileVerified declines and the caller compiles the
// ordinary way (TestCompileVerifiedKnowsWazero fails then).

// decodeModule is wazero's binary decoder (internal/wasm/binary), which
// returns a *wasm.Module.
//
//go:linkname decodeModule github.com/tetratelabs/wazero/internal/wasm/binary.DecodeModule
func decodeModule(binary []byte, enabledFeatures api.CoreFeatures, memoryLimitPages uint32, memoryCapacityFromMax, dwarfEnabled, storeCustomSections bool) (unsafe.Pointer, error)

// fileCacheKey is the key wazero's optimizing engine files a module's
// compiled code under: its ID, mixed with the CPU's features.
//
//go:linkname fileCacheKey github.com/tetratelabs/wazero/internal/engine/wazevo.fileCacheKey
func fileCacheKey(module unsafe.Pointer) [32]byte

// errUnvouched refuses, during a verified compile, a cache miss or an
// entry's deletion: either would have wazero compile bytes it did not
// validate. The compile then fails, and the caller compiles again the
// ordinary way.
var errUnvouched = errors.New("compiled entry no longer in the cache: compile it the ordinary way")

// wazeroShape is what CompileVerified needs of wazero's types, found once.
type wazeroShape struct {
	once sync.Once
	err  error
	// compiledModule is wazero's CompiledModule implementation (a struct).
	compiledModule reflect.Type
	// module is internal/wasm.Module (a struct).
	module reflect.Type
}

var shape wazeroShape // read-only once found: a description of wazero's types

// find learns wazero's types from an empty module compiled the ordinary
// way, by an interpreter of its own: its types are every engine's, and it
// writes nothing to any cache.
func (s *wazeroShape) find(ctx context.Context) error {
	s.once.Do(func() {
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		defer rt.Close(ctx)
		empty := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
		c, err := rt.CompileModule(ctx, empty)
		if err != nil {
			s.err = err
			return
		}
		defer c.Close(ctx)
		t := reflect.TypeOf(c)
		if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			s.err = fmt.Errorf("wazero's compiled module is a %s", t)
			return
		}
		s.compiledModule = t.Elem()
		f, ok := s.compiledModule.FieldByName("module")
		if !ok || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
			s.err = errors.New("wazero's compiled module has no module field")
			return
		}
		s.module = f.Type.Elem()
		for _, name := range []string{"compiledEngine", "typeIDs"} {
			if _, ok := s.compiledModule.FieldByName(name); !ok {
				s.err = fmt.Errorf("wazero's compiled module has no %s field", name)
				return
			}
		}
		for _, name := range []string{"TypeSection", "ID"} {
			if _, ok := s.module.FieldByName(name); !ok {
				s.err = fmt.Errorf("wazero's module has no %s field", name)
				return
			}
		}
	})
	return s.err
}

// field returns the field name of the struct v, settable even when it is
// unexported, or an invalid Value.
func field(v reflect.Value, name string) reflect.Value {
	f := v.FieldByName(name)
	if !f.IsValid() || !f.CanAddr() {
		return reflect.Value{}
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// call calls v's method name with args, and returns its results, or an
// error when v has no such method or it takes other arguments.
func call(v reflect.Value, name string, args ...reflect.Value) ([]reflect.Value, error) {
	m := v.MethodByName(name)
	if !m.IsValid() || m.Type().NumIn() != len(args) {
		return nil, fmt.Errorf("wazero: no method %s(%d arguments) on %s", name, len(args), v.Type())
	}
	for i, a := range args {
		if !a.Type().AssignableTo(m.Type().In(i)) {
			return nil, fmt.Errorf("wazero: %s takes %s, not %s", name, m.Type().In(i), a.Type())
		}
	}
	return m.Call(args), nil
}

// errorOf returns the error a method's last result holds, if any.
func errorOf(results []reflect.Value) error {
	if len(results) == 0 {
		return nil
	}
	last := results[len(results)-1]
	if last.Kind() != reflect.Interface || last.IsNil() {
		return nil
	}
	err, _ := last.Interface().(error)
	return err
}

// CompileVerified compiles wasm with rt, an optimizing-compiler runtime
// whose compilation cache this guard observes (Observe), without
// validating it again when the cache holds its compiled code and the guard
// has verified that entry. ok is false when it did not compile (no such
// entry, or a wazero it does not know): the caller then compiles the
// ordinary way. It must run between Begin and its end.
func (g *Guard) CompileVerified(ctx context.Context, rt wazero.Runtime, wasm []byte) (c wazero.CompiledModule, ok bool) {
	files := g.observed()
	if files == nil || shape.find(ctx) != nil {
		return nil, false
	}
	r := reflect.ValueOf(rt)
	if r.Kind() != reflect.Pointer || r.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	r = r.Elem()
	store := field(r, "store")
	features, limit := field(r, "enabledFeatures"), field(r, "memoryLimitPages")
	capFromMax, dwarfOff, custom := field(r, "memoryCapacityFromMax"), field(r, "dwarfDisabled"), field(r, "storeCustomSections")
	ensure := field(r, "ensureTermination")
	for _, f := range []reflect.Value{store, features, limit, capFromMax, dwarfOff, custom, ensure} {
		if !f.IsValid() {
			return nil, false
		}
	}
	if features.Kind() != reflect.Uint64 || limit.Kind() != reflect.Uint32 || capFromMax.Kind() != reflect.Bool ||
		dwarfOff.Kind() != reflect.Bool || custom.Kind() != reflect.Bool || ensure.Kind() != reflect.Bool ||
		store.Kind() != reflect.Pointer || store.IsNil() {
		return nil, false
	}
	if ensure.Bool() {
		// A runtime that stops guests by closing them: not warden's
		// compiler (its interpreter has no file cache at all).
		return nil, false
	}
	ptr, err := decodeModule(wasm, api.CoreFeatures(features.Uint()), uint32(limit.Uint()), capFromMax.Bool(), !dwarfOff.Bool(), custom.Bool())
	if err != nil {
		return nil, false
	}
	modPtr := reflect.NewAt(shape.module, ptr) // *wasm.Module
	mod := modPtr.Elem()
	// What the module's ID is, and so its entry's key: AssignModuleID, with
	// no listeners (warden sets no listener factory).
	assign := modPtr.MethodByName("AssignModuleID")
	if !assign.IsValid() || assign.Type().NumIn() != 3 {
		return nil, false
	}
	assign.Call([]reflect.Value{reflect.ValueOf(wasm), reflect.Zero(assign.Type().In(1)), reflect.ValueOf(false)})
	key := fileCacheKey(ptr)
	if !g.vouches(files.sub + "/" + hex.EncodeToString(key[:])) {
		return nil, false
	}
	// The one effect of Validate that compiling relies on: each function
	// type caches its counts of values.
	types := mod.FieldByName("TypeSection")
	if types.Kind() != reflect.Slice {
		return nil, false
	}
	for i := range types.Len() {
		if _, err := call(types.Index(i).Addr(), "CacheNumInUint64"); err != nil {
			return nil, false
		}
	}
	if _, err := call(modPtr, "BuildMemoryDefinitions"); err != nil {
		return nil, false
	}
	typeIDs, err := call(store, "GetFunctionTypeIDs", types)
	if err != nil || errorOf(typeIDs) != nil {
		return nil, false
	}
	engine := field(store.Elem(), "Engine")
	if !engine.IsValid() || engine.Kind() != reflect.Interface || engine.IsNil() {
		return nil, false
	}
	compile := engine.MethodByName("CompileModule")
	if !compile.IsValid() || compile.Type().NumIn() != 4 {
		return nil, false
	}
	if hook := g.beforeVerified; hook != nil {
		hook()
	}
	// A miss or a deletion now would have the engine compile what nobody
	// validated: the file cache refuses both for this key.
	files.vouch(key, true)
	results := compile.Call([]reflect.Value{reflect.ValueOf(ctx), modPtr, reflect.Zero(compile.Type().In(2)), reflect.ValueOf(false)})
	files.vouch(key, false)
	if errorOf(results) != nil {
		return nil, false
	}
	out := reflect.New(shape.compiledModule)
	for name, v := range map[string]reflect.Value{"module": modPtr, "compiledEngine": engine, "typeIDs": typeIDs[0]} {
		f := field(out.Elem(), name)
		if !f.IsValid() || !v.Type().AssignableTo(f.Type()) {
			return nil, false
		}
		f.Set(v)
	}
	c, isCompiled := out.Interface().(wazero.CompiledModule)
	if !isCompiled {
		return nil, false
	}
	g.verified.Add(1)
	return c, true
}

// Verified counts the compiles CompileVerified did.
func (g *Guard) Verified() int64 { return g.verified.Load() }

// vouches reports whether the guard has verified the entry name in this
// process (Begin's sweep, or its own record of a write).
func (g *Guard) vouches(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.known[name]
	return ok
}

// observed returns the file cache Observe wrapped, nil before.
func (g *Guard) observed() *observedFiles {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.files
}
