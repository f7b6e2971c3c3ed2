// Command hash is a bundled warden tool that computes cryptographic digests
// (sha256, sha512, sha1, md5) of a text or base64 input. It is also the
// runtime's CPU-bound benchmark.
package main

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"hash"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(hashTool{}) }

func main() {}

type hashTool struct{}

var algorithms = map[string]func() hash.Hash{
	"sha256": sha256.New, "sha512": sha512.New, "sha1": sha1.New, "md5": md5.New,
}

type hashArgs struct {
	Text       *string  `json:"text"`
	Base64     *string  `json:"base64"`
	Algorithms []string `json:"algorithms"`
	Repeat     int      `json:"repeat"`
}

var yes = true

func (hashTool) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:  "hash",
		Title: "Hash",
		Description: "Computes hex digests (sha256 by default; also sha512, sha1, md5) of a text, or of binary data given in base64. " +
			"sha1 and md5 are for checksums only, not security.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"text": {"type": "string", "description": "The text to hash, as UTF-8."},
				"base64": {"type": "string", "description": "Binary data to hash, base64-encoded (instead of text)."},
				"algorithms": {"type": "array", "items": {"enum": ["sha256", "sha512", "sha1", "md5"]},
					"description": "Digests to compute; default [\"sha256\"]."},
				"repeat": {"type": "integer", "minimum": 1, "maximum": 100000,
					"description": "Hash the input repeated this many times (default 1)."}
			},
			"oneOf": [{"required": ["text"]}, {"required": ["base64"]}],
			"additionalProperties": false
		}`),
		OutputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"bytes": {"type": "integer"},
				"digests": {"type": "object", "additionalProperties": {"type": "string"}}
			},
			"required": ["bytes", "digests"]
		}`),
		Annotations: &tool.Annotations{ReadOnlyHint: &yes, IdempotentHint: &yes},
		Version:     "1.0.0",
		Category:    "utility",
	}
}

type hashOutput struct {
	Bytes   int64             `json:"bytes"`
	Digests map[string]string `json:"digests"`
}

func (hashTool) Call(_ *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[hashArgs](raw)
	if err != nil {
		return nil, err
	}
	var data []byte
	switch {
	case a.Text != nil && a.Base64 != nil:
		return nil, warden.InvalidArguments(`give either "text" or "base64", not both`)
	case a.Text != nil:
		data = []byte(*a.Text)
	case a.Base64 != nil:
		if data, err = base64.StdEncoding.DecodeString(*a.Base64); err != nil {
			return nil, warden.InvalidArguments(`argument "base64": %v`, err)
		}
	default:
		return nil, warden.InvalidArguments(`give "text" or "base64"`)
	}
	if len(a.Algorithms) == 0 {
		a.Algorithms = []string{"sha256"}
	}
	repeat := max(a.Repeat, 1)
	if repeat > 100000 {
		return nil, warden.InvalidArguments(`argument "repeat": at most 100000, got %d`, repeat)
	}
	hashes := make([]hash.Hash, len(a.Algorithms))
	for i, name := range a.Algorithms {
		newHash, ok := algorithms[name]
		if !ok {
			return nil, warden.InvalidArguments(`argument "algorithms": unknown algorithm %q (known: md5, sha1, sha256, sha512)`, name)
		}
		hashes[i] = newHash()
	}
	for range repeat {
		for _, h := range hashes {
			h.Write(data)
		}
	}
	out := hashOutput{Bytes: int64(len(data)) * int64(repeat), Digests: map[string]string{}}
	text := ""
	for i, name := range a.Algorithms {
		if _, dup := out.Digests[name]; dup {
			continue
		}
		out.Digests[name] = hex.EncodeToString(hashes[i].Sum(nil))
		text += name + " " + out.Digests[name] + "\n"
	}
	return warden.WithStructured(warden.Text(text[:len(text)-1]), out)
}
