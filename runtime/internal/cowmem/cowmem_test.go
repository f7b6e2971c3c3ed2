package cowmem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/warden-run/warden/internal/testwasm"
)

const page = 65536

// guestWAT is a guest that reads, writes and grows its memory itself, so the
// tests see the memory through wazero's compiled code, not only its API.
const guestWAT = `(module
  (memory (export "memory") 1)
  (data (i32.const 16) "segment")
  (func (export "store") (param i32 i32) (i32.store8 (local.get 0) (local.get 1)))
  (func (export "load") (param i32) (result i32) (i32.load8_u (local.get 0)))
  (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0)))
  (func (export "size") (result i32) (memory.size)))`

type guest struct {
	t     testing.TB
	mod   api.Module
	mem   *Memory
	calls map[string]api.Function
}

type env struct {
	t        testing.TB
	rt       wazero.Runtime
	compiled wazero.CompiledModule
}

func newEnv(t testing.TB) *env {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	compiled, err := rt.CompileModule(ctx, testwasm.WATString(t, guestWAT))
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, rt: rt, compiled: compiled}
}

// instantiate makes a guest whose memory is mem.
func (e *env) instantiate(mem *Memory) *guest {
	e.t.Helper()
	ctx := experimental.WithMemoryAllocator(context.Background(), mem)
	mod, err := e.rt.InstantiateModule(ctx, e.compiled, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		e.t.Fatal(err)
	}
	g := &guest{t: e.t, mod: mod, mem: mem, calls: map[string]api.Function{}}
	for _, name := range []string{"store", "load", "grow", "size"} {
		g.calls[name] = mod.ExportedFunction(name)
	}
	return g
}

func (g *guest) call(name string, args ...uint64) uint64 {
	g.t.Helper()
	res, err := g.calls[name].Call(context.Background(), args...)
	if err != nil {
		g.t.Fatalf("%s%v: %v", name, args, err)
	}
	if len(res) == 0 {
		return 0
	}
	return res[0]
}

func (g *guest) store(addr uint32, v byte) { g.call("store", uint64(addr), uint64(v)) }
func (g *guest) load(addr uint32) byte     { return byte(g.call("load", uint64(addr))) }
func (g *guest) grow(pages uint32) int32   { return int32(g.call("grow", uint64(pages))) }

func (g *guest) contents() []byte {
	g.t.Helper()
	view, ok := g.mod.Memory().Read(0, g.mod.Memory().Size())
	if !ok {
		g.t.Fatal("cannot read memory")
	}
	return bytes.Clone(view)
}

// growTo grows the memory through wazero's API to n pages (as the runtime
// does before restoring a snapshot into a new instance).
func (g *guest) growTo(pages uint32) {
	g.t.Helper()
	if cur := g.mod.Memory().Size() / page; cur < pages {
		if _, ok := g.mod.Memory().Grow(pages - cur); !ok {
			g.t.Fatalf("grow to %d pages refused", pages)
		}
	}
}

func (g *guest) reset() {
	g.t.Helper()
	if err := g.mem.Reset(); err != nil {
		g.t.Fatal(err)
	}
}

// pattern is an image whose every byte says where it is, with a page of
// zeros in the middle (a hole in the memfd).
func pattern(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		if i/page != 1 {
			b[i] = byte(i*7 + i/page + 1)
		}
	}
	return b
}

// want is an image followed by zeros up to size.
func want(image []byte, size int) []byte {
	w := make([]byte, size)
	copy(w, image)
	return w
}

// modes runs a test with a shared image and with a copying one.
func modes(t *testing.T, f func(t *testing.T, newImage func([]byte) *Image)) {
	for _, s := range strategies {
		t.Run("shared/"+s.name, func(t *testing.T) {
			if runtime.GOOS != "linux" {
				t.Skip("copy on write needs Linux")
			}
			f(t, func(b []byte) *Image { return sharedImage(t, b, s.strategy) })
		})
	}
	t.Run("copy", func(t *testing.T) {
		f(t, func(b []byte) *Image { return newImage(b, false) })
	})
}

var strategies = []struct {
	name     string
	strategy resetStrategy
}{{"restore", resetRestore}, {"discard", resetDiscard}, {"remap", resetRemap}}

func sharedImage(t testing.TB, b []byte, s resetStrategy) *Image {
	t.Helper()
	im := NewImage(b)
	if !im.Shared() {
		t.Fatalf("image not shared on Linux: %v", im.SharingError())
	}
	if s == resetRestore && im.pages == nil {
		t.Fatal("pagemap not readable on Linux")
	}
	im.strategy = s
	return im
}

func TestResetRestoresImage(t *testing.T) {
	modes(t, func(t *testing.T, newImage func([]byte) *Image) {
		e := newEnv(t)
		image := pattern(3 * page)
		im := newImage(image)
		defer im.Close()
		mem, err := im.NewMemory(16 * page)
		if err != nil {
			t.Fatal(err)
		}
		if mem.Shared() != im.Shared() {
			t.Fatalf("memory shared %v, image shared %v", mem.Shared(), im.Shared())
		}
		g := e.instantiate(mem)
		defer g.mod.Close(context.Background())
		// Before the first reset the content is unspecified (wazero wrote
		// the data segment; it may or may not be there).
		if got := g.contents(); len(got) != page {
			t.Fatalf("new memory is %d bytes, want the module's minimum %d", len(got), page)
		}
		if err := mem.Reset(); err == nil {
			t.Fatal("reset of a memory shorter than the image succeeded")
		}
		g.growTo(3)
		g.reset()
		if got := g.contents(); !bytes.Equal(got, image) {
			t.Fatal("memory after reset is not the image")
		}
		for _, addr := range []uint32{0, 4095, 4096, page + 5, 3*page - 1} {
			g.store(addr, 0xEE)
			if got := g.load(addr); got != 0xEE {
				t.Fatalf("load(%d) = %#x after storing 0xee", addr, got)
			}
		}
		g.reset()
		if got := g.contents(); !bytes.Equal(got, image) {
			t.Fatal("memory after a second reset is not the image")
		}
		for _, addr := range []uint32{0, page + 5, 3*page - 1} {
			if got, w := g.load(addr), image[addr]; got != w {
				t.Fatalf("guest load(%d) = %#x after reset, want %#x", addr, got, w)
			}
		}
		if mem.Size() != 3*page {
			t.Fatalf("Size() = %d, want %d", mem.Size(), 3*page)
		}
	})
}

func TestGrowPastImageReadsZeroAfterReset(t *testing.T) {
	modes(t, func(t *testing.T, newImage func([]byte) *Image) {
		e := newEnv(t)
		image := pattern(2 * page)
		im := newImage(image)
		defer im.Close()
		mem, _ := im.NewMemory(8 * page)
		g := e.instantiate(mem)
		defer g.mod.Close(context.Background())
		g.growTo(2)
		g.reset()
		if old := g.grow(3); old != 2 {
			t.Fatalf("memory.grow(3) = %d, want 2", old)
		}
		if got := g.contents(); !bytes.Equal(got, want(image, 5*page)) {
			t.Fatal("grown pages are not zero")
		}
		for a := uint32(2 * page); a < 5*page; a += 4093 {
			g.store(a, byte(a)|1)
		}
		g.reset()
		// wazero cannot shrink a memory: the length stays, the pages past
		// the image read zero again.
		if size := g.call("size"); size != 5 {
			t.Fatalf("memory.size = %d after reset, want 5", size)
		}
		if got := g.contents(); !bytes.Equal(got, want(image, 5*page)) {
			t.Fatal("pages past the image are not zero after reset")
		}
		// Growing again after the reset also reads zero.
		if old := g.grow(1); old != 5 {
			t.Fatalf("memory.grow(1) = %d, want 5", old)
		}
		if got := g.contents(); !bytes.Equal(got, want(image, 6*page)) {
			t.Fatal("pages grown after a reset are not zero")
		}
	})
}

func TestRefusesPastLimit(t *testing.T) {
	modes(t, func(t *testing.T, newImage func([]byte) *Image) {
		e := newEnv(t)
		im := newImage(pattern(page))
		defer im.Close()
		mem, _ := im.NewMemory(4 * page)
		g := e.instantiate(mem)
		defer g.mod.Close(context.Background())
		g.reset()
		if old := g.grow(3); old != 1 {
			t.Fatalf("memory.grow(3) to the limit = %d, want 1", old)
		}
		if mem.Refused() {
			t.Fatal("growth to exactly the limit was refused")
		}
		if old := g.grow(1); old != -1 {
			t.Fatalf("memory.grow(1) past the limit = %d, want -1", old)
		}
		if !mem.Refused() {
			t.Fatal("a refused growth is not reported")
		}
		if size := g.call("size"); size != 4 {
			t.Fatalf("memory.size = %d after a refusal, want 4", size)
		}
		mem.ClearRefused()
		if mem.Refused() {
			t.Fatal("ClearRefused did not clear")
		}
		// The memory still works and resets after a refusal.
		g.store(4*page-1, 9)
		g.reset()
		if got := g.contents(); !bytes.Equal(got, want(pattern(page), 4*page)) {
			t.Fatal("reset after a refusal is not the image")
		}
	})
}

func TestInstancesShareOneImage(t *testing.T) {
	modes(t, func(t *testing.T, newImage func([]byte) *Image) {
		e := newEnv(t)
		image := pattern(4 * page)
		im := newImage(image)
		defer im.Close()
		var guests []*guest
		for i := range 16 {
			mem, err := im.NewMemory(8 * page)
			if err != nil {
				t.Fatal(err)
			}
			g := e.instantiate(mem)
			defer g.mod.Close(context.Background())
			g.growTo(4)
			g.reset()
			g.store(uint32(i*4096), 0xA0|byte(i))
			guests = append(guests, g)
		}
		// Each sees its own write and none of the others'.
		for i, g := range guests {
			w := bytes.Clone(image)
			w[i*4096] = 0xA0 | byte(i)
			if !bytes.Equal(g.contents(), w) {
				t.Fatalf("instance %d sees another instance's write", i)
			}
		}
		// Resetting one leaves the others' writes alone.
		guests[3].reset()
		if !bytes.Equal(guests[3].contents(), image) {
			t.Fatal("reset instance is not the image")
		}
		if got := guests[4].load(4 * 4096); got != 0xA4 {
			t.Fatalf("instance 4 lost its write when instance 3 reset: %#x", got)
		}
	})
}

func TestImageOutlivesClose(t *testing.T) {
	modes(t, func(t *testing.T, newImage func([]byte) *Image) {
		e := newEnv(t)
		image := pattern(2 * page)
		im := newImage(image)
		mem, _ := im.NewMemory(4 * page)
		g := e.instantiate(mem)
		g.growTo(2)
		// The module's owner closes the image while an instance lives.
		im.Close()
		im.Close() // idempotent
		if _, err := im.NewMemory(4 * page); !errors.Is(err, ErrClosed) {
			t.Fatalf("NewMemory after Close: %v, want ErrClosed", err)
		}
		// The live memory still resets to the image (first map and later).
		g.reset()
		g.store(7, 1)
		g.reset()
		if !bytes.Equal(g.contents(), image) {
			t.Fatal("memory of a closed image does not reset to it")
		}
		// wazero's Free on close releases the last reference.
		if err := g.mod.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := im.refs.Load(); n != 0 {
			t.Fatalf("image references after the last memory was freed: %d", n)
		}
		if im.CopyTo(make([]byte, 2*page)) {
			t.Fatal("CopyTo of a released image succeeded")
		}
		if err := mem.Reset(); err == nil {
			t.Fatal("Reset after Free succeeded")
		}
		mem.Free() // idempotent
	})
}

func TestCopyTo(t *testing.T) {
	modes(t, func(t *testing.T, newImage func([]byte) *Image) {
		image := pattern(2*page - 100) // not a whole page
		im := newImage(image)
		defer im.Close()
		dst := bytes.Repeat([]byte{0xFF}, 3*page)
		if !im.CopyTo(dst) {
			t.Fatal("CopyTo failed")
		}
		if !bytes.Equal(dst, want(image, 3*page)) {
			t.Fatal("CopyTo is not the image then zeros")
		}
		if im.CopyTo(make([]byte, len(image)-1)) {
			t.Fatal("CopyTo into a short slice succeeded")
		}
	})
}

// TestUnalignedImage: an image that ends inside a page reads zero after its
// end once reset.
func TestUnalignedImage(t *testing.T) {
	modes(t, func(t *testing.T, newImage func([]byte) *Image) {
		e := newEnv(t)
		image := pattern(page + 100)
		im := newImage(image)
		defer im.Close()
		mem, _ := im.NewMemory(4 * page)
		g := e.instantiate(mem)
		defer g.mod.Close(context.Background())
		g.growTo(2)
		g.store(page+200, 5)
		g.reset()
		if !bytes.Equal(g.contents(), want(image, 2*page)) {
			t.Fatal("memory past an unaligned image is not zero after reset")
		}
	})
}

// TestUnreachableMemoryIsReleased: a memory dropped without Free gives its
// image reference back once collected.
func TestUnreachableMemoryIsReleased(t *testing.T) {
	im := NewImage(pattern(page))
	defer im.Close()
	func() {
		for range 4 {
			if _, err := im.NewMemory(2 * page); err != nil {
				t.Fatal(err)
			}
		}
	}()
	for i := 0; i < 20 && im.refs.Load() != 1; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if n := im.refs.Load(); n != 1 {
		t.Fatalf("image references after its memories became unreachable: %d, want 1", n)
	}
}

func ExampleImage() {
	im := NewImage(make([]byte, 2*page))
	defer im.Close()
	mem, _ := im.NewMemory(16 * page)
	ctx := experimental.WithMemoryAllocator(context.Background(), mem)
	_ = ctx // instantiate the module with ctx, grow it to im.Len(), then mem.Reset()
	fmt.Println(im.Len())
	// Output: 131072
}

// TestResetKeepsPagesMapped: the default reset copies the image back into
// exactly the pages the instance wrote and keeps them, so a next call that
// writes the same pages faults on none; dropping them leaves none private.
func TestResetKeepsPagesMapped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("copy on write needs Linux")
	}
	for _, s := range strategies {
		t.Run(s.name, func(t *testing.T) {
			e := newEnv(t)
			image := pattern(4 * page)
			im := sharedImage(t, image, s.strategy)
			defer im.Close()
			mem, _ := im.NewMemory(8 * page)
			g := e.instantiate(mem)
			defer g.mod.Close(context.Background())
			g.growTo(4)
			g.reset()
			private := func() int {
				n := 0
				if err := privatePages(im.pages, mem.region, len(mem.buf)/osPage, make([]byte, 64), func(int) { n++ }); err != nil {
					t.Fatal(err)
				}
				return n
			}
			if n := private(); n != 0 {
				t.Fatalf("%d private pages right after the first reset", n)
			}
			written := []uint32{0, 3 * 4096, page + 17, 3*page + 4095, 3*page + 4000}
			for _, a := range written {
				g.store(a, 0xCC)
			}
			if n := private(); n != 4 { // two writes share a page
				t.Fatalf("%d private pages after writing 4, want 4", n)
			}
			g.reset()
			if !bytes.Equal(g.contents(), image) {
				t.Fatal("reset is not the image")
			}
			want := 4
			if s.strategy != resetRestore {
				want = 0
			}
			if n := private(); n != want {
				t.Fatalf("%d private pages after reset, want %d", n, want)
			}
		})
	}
}
