package codecache

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The usage journal orders the cache's entries by their last use, for
// Prune. It lives beside the index, one line an entry:
//
//	warden-cache-usage 1
//	<use> <entry>
//
// where use is a logical clock, not a time: every flush of a process's
// uses (Guard.Flush) numbers them after the highest use in the file, so
// the order holds across processes and clocks that jump. An entry is a
// path relative to the cache dir in one of the cache's parts (Prunable).
// The journal is only an ordering hint: a line that does not parse is
// skipped, an entry it does not name counts as never used, and a damaged
// or missing journal costs at worst a recompile of an entry pruned out of
// order, never a wrong answer.
const usageHeader = "warden-cache-usage 1\n"

// usageFile is the journal's name in the cache dir.
const usageFile = "warden-cache.usage"

// maxUsageBytes bounds what decodeUsage reads: an entry's line is under 200
// bytes, and a cache holds far fewer than maxIndexEntries entries.
const maxUsageBytes = maxIndexEntries * 256

// decodeUsage parses a journal: the last use of every entry it names.
// Lines that are not "<decimal> <prunable entry>" are skipped; an entry
// named twice keeps its highest use.
func decodeUsage(data []byte) map[string]uint64 {
	uses := make(map[string]uint64)
	if len(data) > maxUsageBytes || !bytes.HasPrefix(data, []byte(usageHeader)) {
		return uses
	}
	sc := bufio.NewScanner(bytes.NewReader(data[len(usageHeader):]))
	sc.Buffer(make([]byte, 0, 512), 4096)
	for sc.Scan() {
		num, name, ok := strings.Cut(sc.Text(), " ")
		if !ok || !Prunable(name) {
			continue
		}
		use, err := strconv.ParseUint(num, 10, 64)
		if err != nil || strconv.FormatUint(use, 10) != num {
			continue
		}
		if use > uses[name] {
			uses[name] = use
		}
	}
	return uses
}

// encodeUsage renders uses in the order of their names, so that equal
// journals are equal files.
func encodeUsage(uses map[string]uint64) []byte {
	var b bytes.Buffer
	b.WriteString(usageHeader)
	for _, name := range slices.Sorted(maps.Keys(uses)) {
		fmt.Fprintf(&b, "%d %s\n", uses[name], name)
	}
	return b.Bytes()
}

// Parts of the cache dir whose files are entries: each is whole on its own
// (removing one costs a recompile, a pass or a load of that entry alone).
const (
	PartInstrumented = "instrumented" // instcache: <key>.wasm
	PartManifests    = "manifests"    // manifest store: <key>.manifest
	PartCompiled     = "compiled"     // tier marks: <64 hex>
)

// Prunable reports whether name, a slash path relative to the cache dir,
// is an entry of the cache: a compiled entry of wazero's
// (wazero-<version>/<64 hex>), or a file of one of the parts above named
// as its writer names them. Nothing it accepts climbs out of the dir.
func Prunable(name string) bool {
	part, file, ok := strings.Cut(name, "/")
	if !ok {
		return false
	}
	switch part {
	case PartInstrumented:
		key, ok := strings.CutSuffix(file, ".wasm")
		return ok && isHex256(key)
	case PartManifests:
		key, ok := strings.CutSuffix(file, ".manifest")
		return ok && isHex256(key)
	case PartCompiled:
		return isHex256(file)
	}
	return validName(name)
}

func isHex256(s string) bool { return len(s) == 64 && isLowerHex(s) }
