// Package manifest is the on-disk format of descriptor manifests: what a
// loaded module exposes without running any of its code (its descriptor
// document, rejected tools, imports, exports and kind), cached so that a
// warm start lists tools without compiling.
//
// The cache is untrusted input: anyone who can write the cache dir can write
// a manifest. An entry carries its own checksum and names the module sha256
// and load key it was made for; Decode refuses anything malformed, truncated
// or tampered with, and Store.Get refuses an entry made for other bytes or
// other limits, deletes it and reports a miss, so the module is loaded again.
package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/warden-run/warden/runtime/internal/guest"
)

// FormatVersion is the version of the encoding and of what goes into a
// manifest's key. Bump it when the encoding, the instrumentation pass or the
// load-time checks change what a load of the same bytes would produce.
const FormatVersion = 1

// magic opens every manifest file.
var magic = [8]byte{'w', 'a', 'r', 'd', 'e', 'n', 'M', 'F'}

const (
	headerSize   = len(magic) + 4 + 4 // magic, version, body length
	checksumSize = sha256.Size
	// MaxSize bounds an encoded manifest: a descriptor document is bounded
	// by the module's max_output (default 1 MiB), imports and exports by the
	// module's size. A file past it is refused unread.
	MaxSize = 64 << 20
	// maxNames bounds the imports, exports and rejected tools of one entry.
	maxNames = 1 << 16
	// maxName bounds one import, export, tool name or rejection reason.
	maxName = 64 << 10
)

// Kinds of module, as their loader decided (guest.Loaded.Kind).
const (
	KindNative = guest.KindNative
	KindExtism = guest.KindExtism
)

// Manifest is what a module exposes without running code.
type Manifest struct {
	// ModuleSHA256 is the hex sha256 of the module's bytes.
	ModuleSHA256 string `json:"module_sha256"`
	// Key is the hex load key (Key) the manifest was made under.
	Key string `json:"key"`
	// Kind is KindNative or KindExtism.
	Kind guest.Kind `json:"kind"`
	// Descriptor is the descriptor document as the module produced it (for
	// Extism plugins, as converted to the native shape). It is validated
	// again when a manifest is used, under the rules of the warden reading
	// it.
	Descriptor []byte `json:"descriptor"`
	// Rejected lists the tools the module describes that were refused, for
	// display; the loader derives them again from Descriptor.
	Rejected []Rejection `json:"rejected,omitempty"`
	// Imports lists "module.name", sorted; Exports the exported functions
	// and memories as Module.Exports lists them.
	Imports []string `json:"imports,omitempty"`
	Exports []string `json:"exports,omitempty"`
}

// Rejection is a refused tool and why.
type Rejection struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// KeyInput is everything other than the module's bytes that shapes the
// outcome of a load: a manifest is only used under the same key.
type KeyInput struct {
	// ABIVersion is the runtime's tool ABI version.
	ABIVersion int `json:"abi"`
	// Limits is the load-relevant limits (memory, fuel, load budget, max
	// output, compile budget), in a stable encoding.
	Limits map[string]int64 `json:"limits"`
	// HostImports lists the host functions modules may import, with their
	// signatures, sorted: a capability added or removed changes what loads.
	HostImports []string `json:"host"`
}

// Key returns the hex load key of a module with sha256 moduleSHA under in.
func Key(moduleSHA string, in KeyInput) string {
	in.HostImports = slices.Sorted(slices.Values(in.HostImports))
	doc, _ := json.Marshal(struct {
		Format int      `json:"format"`
		Module string   `json:"module"`
		In     KeyInput `json:"in"`
	}{FormatVersion, moduleSHA, in})
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:])
}

// Encode returns the file form of m: header, JSON body, checksum.
func Encode(m *Manifest) ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if headerSize+len(body)+checksumSize > MaxSize {
		return nil, fmt.Errorf("manifest: %d bytes, over the limit of %d", headerSize+len(body)+checksumSize, MaxSize)
	}
	out := make([]byte, 0, headerSize+len(body)+checksumSize)
	out = append(out, magic[:]...)
	out = binary.BigEndian.AppendUint32(out, FormatVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(body)))
	out = append(out, body...)
	sum := sha256.Sum256(out)
	return append(out, sum[:]...), nil
}

// Decode parses and checks an encoded manifest. Any deviation from what
// Encode produces is an error that says what is wrong.
func Decode(data []byte) (*Manifest, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("manifest is %d bytes, over the limit of %d", len(data), MaxSize)
	}
	if len(data) < headerSize+checksumSize {
		return nil, fmt.Errorf("manifest is truncated: %d bytes, a header and checksum alone take %d", len(data), headerSize+checksumSize)
	}
	if !bytes.Equal(data[:len(magic)], magic[:]) {
		return nil, errors.New("not a warden manifest (bad magic)")
	}
	if v := binary.BigEndian.Uint32(data[len(magic):]); v != FormatVersion {
		return nil, fmt.Errorf("manifest format v%d, this warden reads v%d", v, FormatVersion)
	}
	bodyLen := uint64(binary.BigEndian.Uint32(data[len(magic)+4:]))
	if want := uint64(headerSize) + bodyLen + checksumSize; want != uint64(len(data)) {
		return nil, fmt.Errorf("manifest length mismatch: header says %d bytes in all, the file has %d (truncated or extended)", want, len(data))
	}
	end := headerSize + int(bodyLen)
	sum := sha256.Sum256(data[:end])
	if !bytes.Equal(sum[:], data[end:]) {
		return nil, errors.New("manifest checksum mismatch (corrupted or tampered with)")
	}
	dec := json.NewDecoder(bytes.NewReader(data[headerSize:end]))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest body: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("manifest body: data after the JSON object")
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

func (m *Manifest) validate() error {
	if !isHex256(m.ModuleSHA256) {
		return fmt.Errorf("manifest: module_sha256 %.80q is not a lower-case hex sha256", m.ModuleSHA256)
	}
	if !isHex256(m.Key) {
		return fmt.Errorf("manifest: key %.80q is not a lower-case hex sha256", m.Key)
	}
	if m.Kind != KindNative && m.Kind != KindExtism {
		return fmt.Errorf("manifest: kind %.80q is neither %s nor %s", m.Kind, KindNative, KindExtism)
	}
	if len(m.Descriptor) == 0 {
		return errors.New("manifest: empty descriptor")
	}
	if len(m.Imports) > maxNames || len(m.Exports) > maxNames || len(m.Rejected) > maxNames {
		return fmt.Errorf("manifest: more than %d imports, exports or rejected tools", maxNames)
	}
	for _, list := range [][]string{m.Imports, m.Exports} {
		for _, s := range list {
			if len(s) > maxName {
				return fmt.Errorf("manifest: a name of %d bytes, over %d", len(s), maxName)
			}
		}
	}
	for _, r := range m.Rejected {
		if len(r.Name) > maxName || len(r.Reason) > maxName {
			return fmt.Errorf("manifest: a rejection of %d+%d bytes, over %d each", len(r.Name), len(r.Reason), maxName)
		}
	}
	return nil
}

func isHex256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
