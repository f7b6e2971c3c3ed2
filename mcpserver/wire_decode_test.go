package mcpserver

import (
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeSeeds are messages whose decoding decodeMessage must agree on with
// the go-sdk: requests, notifications, responses, errors, and the corners
// of the go-sdk's decoding (case-sensitive keys, duplicate keys, escapes,
// ids of every kind, a method that is not a string).
var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
	`{"jsonrpc":"2.0","id":"a\u00e9\"b","method":"ping"}`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
	`{"jsonrpc":"2.0","id":4,"result":{"x":[1,2,{"y":null}]}}`,
	`{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"no","data":{"k":1}}}`,
	`{"jsonrpc":"2.0","id":6}`,
	`{"jsonrpc":"2.0","result":1}`,
	`{"jsonrpc":"2.0","id":null,"method":"x"}`,
	`{"jsonrpc":"2.0","id":7,"method":""}`,
	`{"jsonrpc":"2.0","id":8,"method":5}`,
	`{"jsonrpc":"2.0","id":9,"method":null}`,
	`{"jsonrpc":"2.0","id":true,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"x"}`,
	`{"jsonrpc":"1.0","id":1,"method":"x"}`,
	`{"JSONRPC":"2.0","ID":1,"Method":"x"}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":"str"}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"x","error":{"code":"nan"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"error":null,"result":null}`,
	`{"jsonrpc":"2.0","id":"\ud800","method":"x"}`,
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}",
	`{"jsonrpc":"2.0","id":9007199254740993,"method":"x"}`,
	`{"jsonrpc":"2.0","id":-0,"method":"x","params":{"deep":` + strings.Repeat(`[`, 998) + strings.Repeat(`]`, 998) + `}}`,
	` {"jsonrpc" : "2.0" , "id" : 3 , "method" : "x" } `,
}

// TestDecodeMessageMatchesGoSDK: for every seed the guard's own decode
// returns what jsonrpc.DecodeMessage returns, message or error.
func TestDecodeMessageMatchesGoSDK(t *testing.T) {
	for _, seed := range decodeSeeds {
		checkDecodeMatches(t, []byte(seed))
	}
}

// FuzzDecodeMessage is TestDecodeMessageMatchesGoSDK on arbitrary objects
// that pass the guard's syntax check.
func FuzzDecodeMessage(f *testing.F) {
	for _, seed := range decodeSeeds {
		f.Add([]byte(seed))
	}
	for _, h := range hostileLines() {
		f.Add([]byte(h.line))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeMatches(t, data)
	})
}

func checkDecodeMatches(t *testing.T, data []byte) {
	t.Helper()
	whole, ref := checkSyntax(data)
	if ref != nil || whole[0] != '{' {
		return // the guard refuses it before decoding
	}
	want, wantErr := jsonrpc.DecodeMessage(whole)
	got, gotErr := decodeMessage(whole)
	if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("%s: error %v, the go-sdk's %v", whole, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: decoded %#v, the go-sdk %#v", whole, got, want)
	}
	// The fast path must not decline what the go-sdk accepts: that would
	// be correct but would bring the 32 KiB back.
	if _, ok := decodeMessageFast(whole); ok != (wantErr == nil) {
		t.Fatalf("%s: fast path ok=%v, the go-sdk's error %v", whole, ok, wantErr)
	}
}

// BenchmarkDecodeMessage compares the guard's decode of a tools/call with
// the go-sdk's own, which it replaces.
//
//	go test ./mcpserver -run '^$' -bench DecodeMessage -benchmem
func BenchmarkDecodeMessage(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"_meta":{"progressToken":3},"name":"echo","arguments":{"text":"hello, warden"}}}`)
	b.Run("go-sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonrpc.DecodeMessage(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("guard", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeMessage(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
