package bundle

import (
	"reflect"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	in := []File{
		{"b/x.go", []byte("-- a 3 --\nnot a header\n")},
		{"a", []byte{}},
		{"c", []byte("no newline at end")},
	}
	out, err := Parse(Format(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []File{in[1], in[0], in[2]}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("round trip: got %q, want %q", out, want)
	}
}

func TestParseRefusesATruncatedArchive(t *testing.T) {
	_, err := Parse([]byte("-- a 10 --\nshort\n"))
	if err == nil || err.Error() != `bundle: line 1: a: size 10 does not fit the archive` {
		t.Fatalf("got %v", err)
	}
}
