package wasmfile

import (
	"bytes"
	"errors"
	"testing"
)

func coreModule(n int) []byte {
	b := make([]byte, n)
	copy(b, []byte{0, 'a', 's', 'm', 1, 0, 0, 0})
	return b
}

func componentBinary() []byte { return []byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0} }

func TestSniffWasm(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want Kind
	}{
		{coreModule(8), Core},
		{coreModule(100), Core},
		{componentBinary(), Component},
		{[]byte{0, 'a', 's', 'm', 0x0e, 0, 1, 0}, Component},
		{[]byte{0, 'a', 's', 'm', 2, 0, 0, 0}, Unknown},
		{[]byte{0, 'a', 's', 'm', 1, 0, 0}, NotWasm},
		{[]byte("\x7fELF\x02\x01\x01\x00"), NotWasm},
		{nil, NotWasm},
	} {
		if got := Sniff(c.in); got != c.want {
			t.Errorf("Sniff(% x) = %v, want %v", c.in, got, c.want)
		}
	}
}

func FuzzSniffWasm(f *testing.F) {
	f.Add(coreModule(8))
	f.Add(componentBinary())
	f.Add([]byte("\x00asm"))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k := Sniff(b)
		err := Check(b, "fuzz")
		if (k == Core) != (err == nil) {
			t.Fatalf("kind %v but Check error %v", k, err)
		}
		if k == Component && !errors.Is(err, ErrComponent) {
			t.Fatalf("component not refused as one: %v", err)
		}
		if k != NotWasm && !bytes.HasPrefix(b, Magic) {
			t.Fatalf("kind %v without the magic", k)
		}
	})
}
