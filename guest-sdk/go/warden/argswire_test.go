package warden

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"
)

// The shapes decodeFlatArgs takes and some it must refuse.
type (
	flatArgs struct {
		Text  string `json:"text"`
		Flag  bool   `json:"flag,omitempty"`
		Name  string
		Upper string `json:"Text"`
		Dash  string `json:"a-b,omitzero"`
	}
	namedString  string
	refusedNamed struct {
		Text namedString `json:"text"`
	}
	refusedQuoted struct {
		Flag bool `json:"flag,string"`
	}
	refusedNumber struct {
		Text string `json:"text"`
		N    int    `json:"n"`
	}
	refusedDup struct {
		A string `json:"X"`
		X string
	}
	refusedTag struct {
		Text string `json:"t€xt"`
	}
	refusedUnmarshaler struct {
		Text string `json:"text"`
	}
	refusedTextUnmarshaler struct {
		Text string `json:"text"`
	}
)

func (a *refusedUnmarshaler) UnmarshalJSON([]byte) error { a.Text = "own"; return nil }

func (a refusedTextUnmarshaler) UnmarshalText([]byte) error { return nil }

// checkFlatArgs asserts that when decodeFlatArgs accepts b into a T, json.Unmarshal
// accepts it too and makes the same T.
func checkFlatArgs[T any](t *testing.T, b []byte) bool {
	t.Helper()
	var got T
	if !decodeFlatArgs(b, reflect.TypeFor[T](), unsafe.Pointer(&got)) {
		return false
	}
	var want T
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("fast path accepted %q into %T, encoding/json: %v", b, got, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q into %T:\nfast %+v\njson %+v", b, got, got, want)
	}
	return true
}

func checkAllFlatArgs(t *testing.T, b []byte) {
	t.Helper()
	checkFlatArgs[flatArgs](t, b)
	checkFlatArgs[struct {
		Text string `json:"text"`
	}](t, b)
	for _, refused := range []bool{
		checkFlatArgs[refusedNamed](t, b), checkFlatArgs[refusedQuoted](t, b), checkFlatArgs[refusedNumber](t, b),
		checkFlatArgs[refusedDup](t, b), checkFlatArgs[refusedTag](t, b), checkFlatArgs[map[string]string](t, b),
		checkFlatArgs[refusedUnmarshaler](t, b), checkFlatArgs[refusedTextUnmarshaler](t, b),
	} {
		if refused {
			t.Fatalf("fast path took %q into a type it must leave to encoding/json", b)
		}
	}
	// Args itself returns what it returned before, error included.
	got, gotErr := Args[flatArgs](b)
	var want flatArgs
	wantErr := error(nil)
	if len(bytes.TrimSpace(b)) > 0 { // Args: blank arguments are the zero T
		if err := json.Unmarshal(b, &want); err != nil {
			wantErr = argsError(err) // want keeps what encoding/json set, as Args returns it
		}
	}
	if !reflect.DeepEqual(got, want) || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("Args(%q) = %+v, %v; encoding/json: %+v, %v", b, got, gotErr, want, wantErr)
	}
}

func TestFlatArgsMatchEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		fast bool // whether the fast path takes it into a flatArgs
	}{
		{`{"text":"hello"}`, true},
		{` { "text" : "a <b> & ü😀" , "flag" : true, "Name": "n", "Text": "T", "a-b": "" } `, true},
		{`{"flag":false}`, true},
		{`{}`, true},
		{`{"TEXT":"folded"}`, false},
		{`{"name":"folded"}`, false},
		{`{"text":"a","text":"b"}`, false},
		{`{"text":null}`, false},
		{`{"text":"esc\"aped"}`, false},
		{`{"text":"\u00e9"}`, false},
		{`{"text":"bad ` + "\xff" + `"}`, false},
		{`{"text":"` + "\u2028" + `"}`, true},
		{`{"text":1}`, false},
		{`{"flag":"true"}`, false},
		{`{"flag":tru}`, false},
		{`{"unknown":1}`, false},
		{`{"text":"a"} x`, false},
		{`{"text":"a",}`, false},
		{`{"text":"a"`, false},
		{`null`, false},
		{`[]`, false},
		{`"x"`, false},
	} {
		var v flatArgs
		if got := decodeFlatArgs([]byte(tc.in), reflect.TypeFor[flatArgs](), unsafe.Pointer(&v)); got != tc.fast {
			t.Errorf("decodeFlatArgs(%s) = %v, want %v", tc.in, got, tc.fast)
		}
		checkAllFlatArgs(t, []byte(tc.in))
	}
}

func FuzzFlatArgs(f *testing.F) {
	for _, s := range wireStrings {
		raw, _ := json.Marshal(map[string]any{"text": s, "flag": true, "Name": s})
		f.Add(raw)
	}
	f.Add([]byte(` { "text" : "a", "Text": "b", "a-b": "c", "flag": false } `))
	f.Add([]byte(`{"TEXT":"a","text":"b","text":"c","flag":null}`))
	f.Add([]byte(`{"X":"a","X":"b","n":1e400}`))
	f.Fuzz(func(t *testing.T, b []byte) { checkAllFlatArgs(t, b) })
}

func BenchmarkArgs(b *testing.B) {
	type echoArgs struct {
		Text string `json:"text"`
	}
	args := json.RawMessage(`{"text":"hello"}`)
	b.Run("path=fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Args[echoArgs](args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("path=encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a echoArgs
			if err := json.Unmarshal(args, &a); err != nil {
				b.Fatal(err)
			}
		}
	})
}
