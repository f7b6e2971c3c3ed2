package main

import (
	"encoding/json"
	"testing"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/internal/schema"
)

func TestHash(t *testing.T) {
	reg := warden.NewRegistry(hashTool{})
	cases := []struct{ args, want string }{
		{`{"text":"abc"}`, `{"content":[{"type":"text","text":"sha256 ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}],"structuredContent":{"bytes":3,"digests":{"sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}}}`},
		{`{"base64":"YWJj","algorithms":["md5","sha1"]}`, `{"content":[{"type":"text","text":"md5 900150983cd24fb0d6963f7d28e17f72\nsha1 a9993e364706816aba3e25717850c26c9cd0d89d"}],"structuredContent":{"bytes":3,"digests":{"md5":"900150983cd24fb0d6963f7d28e17f72","sha1":"a9993e364706816aba3e25717850c26c9cd0d89d"}}}`},
		// sha512("") is the well-known cf83e1357eef... value.
		{`{"text":"","algorithms":["sha512"]}`, `{"content":[{"type":"text","text":"sha512 cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"}],"structuredContent":{"bytes":0,"digests":{"sha512":"cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"}}}`},
		// "a" a million times: the NIST test vector for sha256.
		{`{"text":"aaaaaaaaaa","repeat":100000}`, `{"content":[{"type":"text","text":"sha256 cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"}],"structuredContent":{"bytes":1000000,"digests":{"sha256":"cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"}}}`},
		{`{"text":"a","base64":"YQ=="}`, `{"error":{"kind":"invalid_arguments","message":"give either \"text\" or \"base64\", not both"}}`},
		{`{}`, `{"error":{"kind":"invalid_arguments","message":"give \"text\" or \"base64\""}}`},
		{`{"base64":"!!"}`, `{"error":{"kind":"invalid_arguments","message":"argument \"base64\": illegal base64 data at input byte 0"}}`},
		{`{"text":"a","algorithms":["crc32"]}`, `{"error":{"kind":"invalid_arguments","message":"argument \"algorithms\": unknown algorithm \"crc32\" (known: md5, sha1, sha256, sha512)"}}`},
		{`{"text":"a","repeat":100001}`, `{"error":{"kind":"invalid_arguments","message":"argument \"repeat\": at most 100000, got 100001"}}`},
	}
	for _, c := range cases {
		got := string(reg.Dispatch([]byte(`{"tool":"hash","arguments":`+c.args+`}`), nil))
		if got != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.args, got, c.want)
		}
	}
	d := hashTool{}.Descriptor()
	if _, err := schema.CompileDescriptor(&d); err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(d.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
}
