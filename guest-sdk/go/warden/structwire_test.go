package warden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// Shapes encodeFlatStruct must refuse, beyond those decodeFlatArgs refuses.
type (
	refusedMarshaler struct {
		Text string `json:"text"`
	}
	refusedPtrMarshaler struct {
		Text string `json:"text"`
	}
	refusedTextMarshaler struct {
		Text string `json:"text"`
	}
	refusedSkipped struct {
		Text string `json:"text"`
		Skip string `json:"-"`
	}
	refusedUnexported struct {
		Text   string `json:"text"`
		hidden string
	}
	// dashNamed is encoded: "-," names the field "-".
	dashNamed struct {
		Dash string `json:"-,"`
		On   bool   `json:",omitempty"`
		Off  bool
	}
)

func (refusedMarshaler) MarshalJSON() ([]byte, error)     { return []byte(`{"own":1}`), nil }
func (*refusedPtrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"own":2}`), nil }
func (refusedTextMarshaler) MarshalText() ([]byte, error) { return []byte(`own`), nil }
func (r refusedUnexported) unused() string                { return r.hidden }

// checkEncodeFlat asserts that when encodeFlatStruct encodes v (and &v),
// the bytes are exactly json.Marshal's, and that structured, which uses
// it, always returns what json.Marshal returns. It reports whether the fast
// path took v.
func checkEncodeFlat[T any](t *testing.T, v T) bool {
	t.Helper()
	took := false
	for _, x := range []any{v, &v} {
		want, err := json.Marshal(x)
		got, ok := encodeFlatStruct(x)
		if ok {
			took = true
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%T %+v:\nfast %s\njson %s (%v)", x, x, got, want, err)
			}
		}
		if raw, err := structured(x); err == nil && !bytes.Equal(raw, want) {
			t.Fatalf("structured(%T %+v) = %s, json.Marshal: %s", x, x, raw, want)
		}
	}
	return took
}

func checkAllEncodeFlat(t *testing.T, a, b string, flag bool) {
	t.Helper()
	if !checkEncodeFlat(t, flatArgs{Text: a, Flag: flag, Name: b, Upper: a + b, Dash: b}) ||
		!checkEncodeFlat(t, struct {
			Text string `json:"text"`
		}{a}) ||
		!checkEncodeFlat(t, dashNamed{Dash: a, On: flag, Off: !flag}) ||
		!checkEncodeFlat(t, struct{}{}) {
		t.Fatal("fast path refused a flat struct")
	}
	for _, took := range []bool{
		checkEncodeFlat(t, refusedMarshaler{a}), checkEncodeFlat(t, refusedPtrMarshaler{a}),
		checkEncodeFlat(t, refusedTextMarshaler{a}), checkEncodeFlat(t, refusedSkipped{a, b}),
		checkEncodeFlat(t, refusedUnexported{a, b}), checkEncodeFlat(t, refusedNamed{namedString(a)}),
		checkEncodeFlat(t, refusedQuoted{flag}), checkEncodeFlat(t, refusedNumber{a, len(b)}),
		checkEncodeFlat(t, refusedDup{a, b}), checkEncodeFlat(t, refusedTag{a}),
		checkEncodeFlat(t, map[string]string{"text": a}), checkEncodeFlat(t, a),
	} {
		if took {
			t.Fatalf("fast path encoded (%q, %q) as a type it must leave to encoding/json", a, b)
		}
	}
}

func TestEncodeFlatStructMatchesEncodingJSON(t *testing.T) {
	for _, a := range wireStrings {
		for _, b := range []string{"", "x", "<&>"} {
			checkAllEncodeFlat(t, a, b, true)
			checkAllEncodeFlat(t, a, b, false)
		}
	}
	if got, ok := encodeFlatStruct((*flatArgs)(nil)); ok {
		t.Fatalf("encoded a nil pointer as %s", got)
	}
	if got, ok := encodeFlatStruct(nil); ok {
		t.Fatalf("encoded nil as %s", got)
	}
}

func FuzzEncodeFlatStruct(f *testing.F) {
	for _, s := range wireStrings {
		f.Add(s, "<b>", true)
	}
	f.Fuzz(func(t *testing.T, a, b string, flag bool) { checkAllEncodeFlat(t, a, b, flag) })
}

// TestFlatShapeCacheConcurrent runs both fast paths from several goroutines
// over more struct types than the shape cache holds, so that entries are
// evicted while others read them (run it with -race): every result must
// still be encoding/json's.
func TestFlatShapeCacheConcurrent(t *testing.T) {
	type (
		s0 struct{ A string }
		s1 struct{ B string }
		s2 struct{ C string }
		s3 struct{ D string }
		s4 struct{ E string }
		s5 struct{ F string }
		s6 struct{ G string }
		s7 struct{ H string }
		s8 struct{ I string }
		s9 struct{ J string }
	)
	roundTrip := []func(string) error{
		rt[s0], rt[s1], rt[s2], rt[s3], rt[s4], rt[s5], rt[s6], rt[s7], rt[s8], rt[s9],
		rt[flatArgs], rt[refusedMarshaler], rt[refusedUnmarshaler],
	}
	if len(roundTrip) <= flatShapeCacheSize {
		t.Fatal("the test must use more types than the cache holds")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				if err := roundTrip[(g*7+i)%len(roundTrip)](fmt.Sprint("v<", i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// rt encodes a T holding s in its fields through structured and decodes
// the result through Args, comparing both with encoding/json.
func rt[T any](s string) error {
	var v T
	rv := reflect.ValueOf(&v).Elem()
	for i := range rv.NumField() {
		if rv.Field(i).Kind() == reflect.String && rv.Field(i).CanSet() {
			rv.Field(i).SetString(s)
		}
	}
	raw, err := structured(v)
	want, _ := json.Marshal(v)
	if err != nil || !bytes.Equal(raw, want) {
		return fmt.Errorf("structured(%T) = %s, %v; json.Marshal: %s", v, raw, err, want)
	}
	got, err := Args[T](raw)
	var wantV T
	wantErr := json.Unmarshal(raw, &wantV)
	if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, wantV) {
		return fmt.Errorf("Args[%T](%s) = %+v, %v; json.Unmarshal: %+v, %v", v, raw, got, err, wantV, wantErr)
	}
	return nil
}
