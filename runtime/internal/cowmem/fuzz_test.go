package cowmem

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"testing"
)

// FuzzResetGrow drives a memory through writes (by wazero's API and by guest
// code), growth (within and past the limit) and resets, decoded from the
// fuzz input, and compares it after every step that can go wrong with a
// plain byte slice that models what the memory must hold.
func FuzzResetGrow(f *testing.F) {
	e := newEnv(f)
	image := pattern(2 * page)
	images := []*Image{newImage(image, false)}
	if runtime.GOOS == "linux" {
		for _, s := range strategies {
			images = append(images, sharedImage(f, image, s.strategy))
		}
	}
	defer func() {
		for _, im := range images {
			im.Close()
		}
	}()
	const limitPages = 6
	f.Add([]byte{0, 0, 0x10, 0x00, 7, 1, 2, 2, 4})
	f.Add([]byte{0, 1, 2, 3, 0xff, 0xff, 9, 2, 4, 1, 3, 2, 4})
	f.Add([]byte{1, 1, 2, 1, 2, 1, 2, 1, 2, 2, 4, 0, 0xff, 0xff, 1, 2, 4})
	f.Add([]byte{0, 3, 0x80, 0x00, 5, 2, 3, 0x80, 0x00, 6, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 || len(ops) > 256 {
			return
		}
		im := images[int(ops[0])%len(images)]
		ops = ops[1:]
		mem, err := im.NewMemory(limitPages * page)
		if err != nil {
			t.Fatal(err)
		}
		e.t = t
		g := e.instantiate(mem)
		defer g.mod.Close(context.Background())
		g.growTo(2)
		g.reset()
		model := bytes.Clone(image)
		next := func() byte {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return b
		}
		check := func(step string) {
			t.Helper()
			if got := g.contents(); !bytes.Equal(got, model) {
				i := 0
				for i < min(len(got), len(model)) && got[i] == model[i] {
					i++
				}
				t.Fatalf("after %s: memory (%d bytes) differs from the model (%d bytes) at byte %d", step, len(got), len(model), i)
			}
		}
		for len(ops) > 0 {
			switch next() % 5 {
			case 0, 3: // write a byte, through the API or the guest
				addr := uint32(binary.BigEndian.Uint16([]byte{next(), next()})) * 7 % uint32(len(model))
				v := next()
				if ops := len(ops); ops%2 == 0 {
					g.mod.Memory().WriteByte(addr, v)
				} else {
					g.store(addr, v)
				}
				model[addr] = v
			case 1: // grow, maybe past the limit
				delta := uint32(next() % 4)
				mem.ClearRefused()
				old := g.grow(delta)
				pages := uint32(len(model) / page)
				if pages+delta > limitPages {
					if old != -1 || !mem.Refused() {
						t.Fatalf("grow %d pages past the limit: memory.grow = %d, refused %v", delta, old, mem.Refused())
					}
				} else {
					if old != int32(pages) || mem.Refused() {
						t.Fatalf("grow %d pages from %d: memory.grow = %d, refused %v", delta, pages, old, mem.Refused())
					}
					model = append(model, make([]byte, int(delta)*page)...)
				}
				check("grow")
			case 2:
				g.reset()
				copy(model, image)
				clear(model[len(image):])
				check("reset")
			case 4:
				check("check")
			}
		}
		check("the end")
		if uint64(len(model)) != mem.Size() {
			t.Fatalf("Size() = %d, model %d", mem.Size(), len(model))
		}
	})
}
