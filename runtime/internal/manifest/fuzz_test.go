package manifest

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

func appendSum(b []byte) []byte {
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// FuzzDecode: no input crashes Decode or takes it past MaxSize, and what it
// accepts is a manifest Encode would write (it encodes and decodes back to
// the same fields).
func FuzzDecode(f *testing.F) {
	good, _ := Encode(sample())
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(frame([]byte(`{}`)))
	f.Add(frame([]byte(`{"module_sha256":"","key":"","kind":"native","descriptor":null}`)))
	f.Add(frame(good[headerSize : len(good)-checksumSize]))
	f.Add([]byte("wardenMF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		again, err := Encode(m)
		if err != nil {
			t.Fatalf("decoded manifest does not encode: %v", err)
		}
		m2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v", err)
		}
		if m2.ModuleSHA256 != m.ModuleSHA256 || m2.Key != m.Key || !bytes.Equal(m2.Descriptor, m.Descriptor) {
			t.Fatal("round trip changed the manifest")
		}
	})
}

// FuzzFramedBody fuzzes the JSON body behind a valid header and checksum,
// which random bytes rarely reach.
func FuzzFramedBody(f *testing.F) {
	good, _ := Encode(sample())
	f.Add(good[headerSize : len(good)-checksumSize])
	f.Add([]byte(`{"kind":"extism"}`))
	f.Add([]byte(`{"rejected":[{"name":"x","reason":"y"}],"imports":["a"]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Decode(frame(body))
		if err != nil {
			return
		}
		if _, err := Encode(m); err != nil {
			t.Fatalf("accepted a body Encode refuses: %v", err)
		}
	})
}
