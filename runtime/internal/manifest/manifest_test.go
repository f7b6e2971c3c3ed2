package manifest

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sample() *Manifest {
	return &Manifest{
		ModuleSHA256: strings.Repeat("ab", 32),
		Key:          Key(strings.Repeat("ab", 32), KeyInput{ABIVersion: 1, Limits: map[string]int64{"memory": 1 << 20}}),
		Kind:         KindNative,
		Descriptor:   []byte(`{"tools":[{"name":"echo"}]}`),
		Rejected:     []Rejection{{Name: "Bad", Reason: "tool \"Bad\": invalid"}},
		Imports:      []string{"warden.log"},
		Exports:      []string{"memory (memory)", "warden_call"},
	}
}

func TestRoundTrip(t *testing.T) {
	m := sample()
	data, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Encode(got)
	if !bytes.Equal(data, again) {
		t.Fatal("decode then encode changed the bytes")
	}
}

func TestKeyChangesWithEveryInput(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	base := KeyInput{ABIVersion: 1, Limits: map[string]int64{"memory": 1}, HostImports: []string{"warden.log"}}
	k := Key(sha, base)
	for name, in := range map[string]KeyInput{
		"abi":    {ABIVersion: 2, Limits: base.Limits, HostImports: base.HostImports},
		"limits": {ABIVersion: 1, Limits: map[string]int64{"memory": 2}, HostImports: base.HostImports},
		"host":   {ABIVersion: 1, Limits: base.Limits, HostImports: []string{"warden.log", "warden.fs_read"}},
	} {
		if Key(sha, in) == k {
			t.Errorf("changing %s left the key unchanged", name)
		}
	}
	if Key(strings.Repeat("cd", 32), base) == k {
		t.Error("changing the module left the key unchanged")
	}
	if Key(sha, KeyInput{ABIVersion: 1, Limits: base.Limits, HostImports: []string{"warden.log"}}) != k {
		t.Error("the same inputs gave another key")
	}
}

func TestDecodeRefusesDamage(t *testing.T) {
	data, _ := Encode(sample())
	for name, bad := range map[string][]byte{
		"empty":           {},
		"truncated":       data[:len(data)-1],
		"header only":     data[:headerSize],
		"extended":        append(append([]byte(nil), data...), 0),
		"flipped body":    flip(data, headerSize+3),
		"flipped sum":     flip(data, len(data)-1),
		"flipped magic":   flip(data, 0),
		"flipped version": flip(data, len(magic)+3),
		"flipped length":  flip(data, len(magic)+7),
	} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func flip(data []byte, i int) []byte {
	out := append([]byte(nil), data...)
	out[i] ^= 0x40
	return out
}

// TestDecodeRefusesValidChecksumBadBody: the checksum is no signature;
// a body rewritten with a fresh checksum must still be well-formed.
func TestDecodeRefusesValidChecksumBadBody(t *testing.T) {
	for name, body := range map[string]string{
		"unknown field": `{"module_sha256":"` + strings.Repeat("ab", 32) + `","key":"` + strings.Repeat("ab", 32) + `","kind":"native","descriptor":"e30=","extra":1}`,
		"bad sha":       `{"module_sha256":"AB","key":"` + strings.Repeat("ab", 32) + `","kind":"native","descriptor":"e30="}`,
		"bad kind":      `{"module_sha256":"` + strings.Repeat("ab", 32) + `","key":"` + strings.Repeat("ab", 32) + `","kind":"elf","descriptor":"e30="}`,
		"no descriptor": `{"module_sha256":"` + strings.Repeat("ab", 32) + `","key":"` + strings.Repeat("ab", 32) + `","kind":"native"}`,
		"trailing":      `{"module_sha256":"` + strings.Repeat("ab", 32) + `","key":"` + strings.Repeat("ab", 32) + `","kind":"native","descriptor":"e30="} {}`,
	} {
		if _, err := Decode(frame([]byte(body))); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func TestStoreRefusesAndDeletesBadEntries(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	s := NewStore(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	m := sample()
	for name, damage := range map[string]func(path string){
		"flipped byte": func(p string) { d, _ := os.ReadFile(p); os.WriteFile(p, flip(d, headerSize+10), 0o600) },
		"truncated":    func(p string) { d, _ := os.ReadFile(p); os.WriteFile(p, d[:len(d)/2], 0o600) },
		"wrong sha": func(p string) {
			other := *m
			other.ModuleSHA256 = strings.Repeat("cd", 32)
			d, _ := Encode(&other)
			os.WriteFile(p, d, 0o600)
		},
		"wrong key": func(p string) {
			other := *m
			other.Key = strings.Repeat("cd", 32)
			d, _ := Encode(&other)
			os.WriteFile(p, d, 0o600)
		},
		"wrong checksum": func(p string) { d, _ := os.ReadFile(p); os.WriteFile(p, flip(d, len(d)-5), 0o600) },
	} {
		logs.Reset()
		if err := s.Put(m); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Get(m.Key, m.ModuleSHA256); !ok {
			t.Fatalf("%s: intact entry missed", name)
		}
		damage(s.Path(m.Key))
		if _, ok := s.Get(m.Key, m.ModuleSHA256); ok {
			t.Errorf("%s: served", name)
		}
		if _, err := os.Stat(s.Path(m.Key)); !os.IsNotExist(err) {
			t.Errorf("%s: not deleted (%v)", name, err)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), filepath.Base(s.Path(m.Key))) {
			t.Errorf("%s: no warning naming the file: %s", name, logs.String())
		}
	}
	// Another module's bytes under the right key are refused too.
	s.Put(m)
	if _, ok := s.Get(m.Key, strings.Repeat("ef", 32)); ok {
		t.Error("served for other bytes")
	}
}

func TestStoreMemory(t *testing.T) {
	s := NewStore("", slog.New(slog.DiscardHandler))
	m := sample()
	s.Put(m)
	if _, ok := s.Get(m.Key, m.ModuleSHA256); !ok {
		t.Fatal("miss")
	}
	s.Corrupt(m.Key, func(d []byte) []byte { return flip(d, 20) })
	if _, ok := s.Get(m.Key, m.ModuleSHA256); ok {
		t.Fatal("corrupted entry served")
	}
	if s.Path(m.Key) != "" {
		t.Error("memory store names a path")
	}
}

// frame wraps body in a valid header and checksum.
func frame(body []byte) []byte {
	var m Manifest
	_ = m
	out := append([]byte(nil), magic[:]...)
	out = append(out, 0, 0, 0, FormatVersion)
	n := len(body)
	out = append(out, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	out = append(out, body...)
	return appendSum(out)
}
