package cowmem

import (
	"context"
	"runtime"
	"testing"
)

// BenchmarkReset is one call's worth of memory traffic on a 5 MiB image
// (80 wasm pages, the size of a Go guest's after _initialize): the guest
// reads 320 of its 1,280 4 KiB pages and writes 40, then the memory is
// reset, by each strategy and by copying.
func BenchmarkReset(b *testing.B) {
	const pages = 80
	image := pattern(pages * page)
	run := func(b *testing.B, im *Image) {
		e := newEnv(b)
		mem, _ := im.NewMemory(2 * pages * page)
		g := e.instantiate(mem)
		defer g.mod.Close(context.Background())
		g.growTo(pages)
		g.reset()
		b.ResetTimer()
		for b.Loop() {
			for p := uint32(0); p < pages*16; p += 4 {
				g.load(p * 4096)
			}
			for p := uint32(0); p < pages*16; p += 32 {
				g.store(p*4096+8, 1)
			}
			g.reset()
		}
	}
	b.Run("copy", func(b *testing.B) {
		im := newImage(image, false)
		defer im.Close()
		run(b, im)
	})
	if runtime.GOOS != "linux" {
		return
	}
	for _, s := range strategies {
		b.Run(s.name, func(b *testing.B) {
			im := sharedImage(b, image, s.strategy)
			defer im.Close()
			run(b, im)
		})
	}
}
