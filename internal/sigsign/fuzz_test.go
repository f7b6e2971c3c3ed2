package sigsign

import (
	"encoding/pem"
	"testing"
)

// FuzzLoadKey: any input is a key or an ErrKey, never a panic.
func FuzzLoadKey(f *testing.F) {
	for _, typ := range []string{"PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY", "ENCRYPTED SIGSTORE PRIVATE KEY", "PUBLIC KEY"} {
		f.Add(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: []byte{0x30, 0x03, 0x02, 0x01, 0x00}}))
	}
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := LoadKey(b)
		if (k == nil) == (err == nil) {
			t.Fatalf("LoadKey = %v, %v", k, err)
		}
	})
}
