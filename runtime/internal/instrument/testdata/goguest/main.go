// Command goguest is a standard-Go wasip1 reactor used by the instrument
// tests and benchmarks: ordinary CPU work (hashing, JSON) plus plain
// recursion, exported with //go:wasmexport.
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

func main() {}

var buf []byte

// sha hashes n bytes of a fixed pattern and returns the digest's first
// eight bytes.
//
//go:wasmexport sha
func sha(n int32) int64 {
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	b := buf[:n]
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	sum := sha256.Sum256(b)
	return int64(binary.LittleEndian.Uint64(sum[:]))
}

type record struct {
	ID    int               `json:"id"`
	Name  string            `json:"name"`
	Tags  []string          `json:"tags"`
	Attrs map[string]string `json:"attrs"`
	Score float64           `json:"score"`
}

// jsonRoundTrip encodes n records, decodes them and encodes them again;
// it returns the length of the result plus a checksum of its bytes.
//
//go:wasmexport json
func jsonRoundTrip(n int32) int64 {
	recs := make([]record, n)
	for i := range recs {
		recs[i] = record{ID: i, Name: strings.Repeat("x", i%17), Tags: []string{"a", "b\"c", "ü"},
			Attrs: map[string]string{"k": "v", "i": string(rune('a' + i%26))}, Score: float64(i) / 3}
	}
	b, err := json.Marshal(recs)
	if err != nil {
		panic(err)
	}
	var back []record
	if err := json.Unmarshal(b, &back); err != nil {
		panic(err)
	}
	b, err = json.Marshal(back)
	if err != nil {
		panic(err)
	}
	return checksum(b)
}

// jsonDeep decodes and re-encodes an array nested depth levels deep.
//
//go:wasmexport json_deep
func jsonDeep(depth int32) int64 {
	s := strings.Repeat("[", int(depth)) + "1" + strings.Repeat("]", int(depth))
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return checksum(b)
}

func checksum(b []byte) int64 {
	var h uint64 = 14695981039346656037
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return int64(h>>16) + int64(len(b))
}

// recurse recurses n deep through an ordinary Go function.
//
//go:wasmexport recurse
func recurse(n int32) int32 {
	if n <= 0 {
		return 0
	}
	return recurse(n-1) + 1
}

// grow allocates n MiB and touches it, so memory.grow runs.
//
//go:wasmexport grow
func grow(n int32) int64 {
	var total int64
	for i := int32(0); i < n; i++ {
		b := make([]byte, 1<<20)
		b[len(b)-1] = byte(i)
		total += int64(b[len(b)-1])
		keep = append(keep, b)
	}
	return total + int64(len(keep))
}

var keep [][]byte

var text string

// regexpMatch compiles a regexp and runs it over about 4 KiB of text, n
// times; it returns the number of matches times 2^32 plus a sum of
// submatch offsets.
//
//go:wasmexport regexp
func regexpMatch(n int32) int64 {
	if text == "" {
		var sb strings.Builder
		for i := 0; sb.Len() < 4096; i++ {
			fmt.Fprintf(&sb, "user%d@host%d.example.org visited /path/%d?q=%x at 2026-11-%02dT%02d:%02d:00Z; ", i*37%1000, i%13, i, i*i, i%28+1, i%24, i%60)
		}
		text = sb.String()
	}
	var total int64
	for range n {
		re := regexp.MustCompile(`([a-z]+[0-9]*)@([a-z0-9]+)\.example\.(org|com)|/path/([0-9]+)\?q=([0-9a-f]+)|(\d{4})-(\d\d)-(\d\d)T`)
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			total += int64(m[0]+m[len(m)-1]) + 1<<32
		}
	}
	return total
}
