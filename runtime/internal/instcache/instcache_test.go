package instcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/warden-run/warden/runtime/internal/instrument"
)

func sample() *instrument.Result {
	return &instrument.Result{
		Wasm: []byte("\x00asm\x01\x00\x00\x00"), FuelGlobal: "warden:fuel", ReserveGlobal: "warden:reserve",
		DepthGlobal: "warden:depth", MaxCallDepth: 1000, PagesGlobal: "warden:pages",
		Globals: []string{"g0", "g1"}, MutatesTables: true, DirectJumps: 3, Deepest: 7, StartExport: "warden:start",
	}
}

func TestRoundTripAndStore(t *testing.T) {
	key := Key("abc", "native", instrument.Config{Fuel: true})
	data, err := Encode(key, sample())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(key, data)
	if err != nil || !reflect.DeepEqual(got, sample()) {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	if _, err := Decode(Key("abc", "native", instrument.Config{Fuel: false}), data); err == nil {
		t.Fatal("an entry decoded under another Config's key")
	}
	s := New(t.TempDir(), nil)
	if _, ok := s.Get(key); ok {
		t.Fatal("hit in an empty store")
	}
	s.Put(key, sample())
	if got, ok := s.Get(key); !ok || !reflect.DeepEqual(got, sample()) {
		t.Fatalf("store round trip: %v %+v", ok, got)
	}
	var none *Store
	none.Put(key, sample())
	if _, ok := none.Get(key); ok {
		t.Fatal("a nil store hit")
	}
}

// TestVersionCoversThePass pins the pass's output for a few fixed modules
// to Version: when the pass changes what it writes, entries cached by the
// old pass must stop matching, so Version must change with it. (When a
// fixture changes and the pass does not, re-record the digest under the
// same Version, after checking that the previous commit's pass gives it.)
func TestVersionCoversThePass(t *testing.T) {
	digests := map[int]string{
		3: "43c2882eb2cea223e57e3e8f0fe4ef86bf2413e8fa9f89a161d71ec18f30acbe",
		4: "889e4f7b5ed04af8453fa3c746b1b417648c2cc9f21b1687b6349823bb583bec",
	}
	h := sha256.New()
	for _, name := range []string{"dispatch", "fuelpaths", "loops", "bulk", "segments"} {
		wasm := wat2wasm(t, filepath.Join("..", "instrument", "testdata", name+".wat"))
		for _, cfg := range []instrument.Config{
			{Fuel: true},
			{Fuel: true, MaxCallDepth: instrument.DefaultMaxCallDepth, VirtualMemory: true, ExportGlobals: true, DeferStart: true},
		} {
			r, err := instrument.Instrument(wasm, cfg)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			h.Write(r.Wasm)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); digests[Version] != got {
		t.Fatalf("the instrument pass's output is %s, not the %q recorded for Version %d: "+
			"if the pass changed, bump Version (entries the old pass cached must not be used) and record the new digest",
			got, digests[Version], Version)
	}
}

func wat2wasm(t *testing.T, path string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "m.wasm")
	if msg, err := exec.Command("wat2wasm", "--enable-tail-call", path, "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm %s: %v\n%s (needs wabt: apt-get install wabt)", path, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKeysDiffer(t *testing.T) {
	base := Key("abc", "native", instrument.Config{})
	for _, k := range []string{
		Key("abd", "native", instrument.Config{}),
		Key("abc", "extism", instrument.Config{}),
		Key("abc", "native", instrument.Config{Limits: instrument.Limits{MaxNesting: 1}}),
	} {
		if k == base {
			t.Fatal("two different loads share a key")
		}
	}
}

func FuzzDecode(f *testing.F) {
	key := Key("abc", "native", instrument.Config{})
	good, _ := Encode(key, sample())
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Decode(key, data)
		if err != nil {
			return
		}
		// Whatever decodes is exactly what Encode writes for it.
		again, err := Encode(key, res)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("decoded entry does not re-encode to its bytes")
		}
	})
}

// TestDamageIsRefused: a flipped bit anywhere in an entry (header, key,
// metadata, module bytes, checksum), a truncation or an extra byte is
// refused, never decoded into a module to compile.
func TestDamageIsRefused(t *testing.T) {
	key := Key("abc", "native", instrument.Config{Fuel: true})
	good, err := Encode(key, sample())
	if err != nil {
		t.Fatal(err)
	}
	for i := range good {
		for bit := range 8 {
			bad := bytes.Clone(good)
			bad[i] ^= 1 << bit
			if _, err := Decode(key, bad); err == nil {
				t.Fatalf("byte %d bit %d flipped: decoded", i, bit)
			}
		}
	}
	for _, bad := range [][]byte{good[:len(good)-1], append(bytes.Clone(good), 0), good[:3]} {
		if _, err := Decode(key, bad); err == nil {
			t.Fatalf("%d bytes of a %d-byte entry decoded", len(bad), len(good))
		}
	}
}
