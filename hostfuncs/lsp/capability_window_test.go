package lsp

import (
	"fmt"
	"testing"
)

// TestWindow: a list longer than MaxResults is cut with truncated set and
// the whole list's total, and an offset reaches every item exactly once.
func TestWindow(t *testing.T) {
	items := make([]int, 2*MaxResults+711)
	for i := range items {
		items[i] = i
	}
	var seen []int
	for offset := 0; ; {
		got, pg := window(items, offset)
		if pg.Total != len(items) {
			t.Fatalf("offset %d: total %d, want %d", offset, pg.Total, len(items))
		}
		seen = append(seen, got...)
		offset += len(got)
		if !pg.Truncated {
			break
		}
		if len(got) != MaxResults {
			t.Fatalf("offset %d: a truncated page of %d items", offset, len(got))
		}
	}
	if fmt.Sprint(seen) != fmt.Sprint(items) {
		t.Fatalf("pages gave %d items, not the list in order", len(seen))
	}
	if got, pg := window([]int(nil), 5); got == nil || len(got) != 0 || pg.Total != 0 || pg.Truncated {
		t.Fatalf("empty list: %v %+v", got, pg)
	}
	if _, err := parseRequest([]byte(`{"op":"references","path":"a.go","line":1,"column":1,"offset":-1}`)); err == nil || err.Error() != "invalid_arguments: references: offset must not be negative, got -1" {
		t.Fatalf("negative offset: %v", err)
	}
	if _, err := parseRequest([]byte(`{"op":"hover","path":"a.go","line":1,"column":1,"offset":3}`)); err == nil || err.Error() != "invalid_arguments: hover takes no offset" {
		t.Fatalf("hover offset: %v", err)
	}
}
