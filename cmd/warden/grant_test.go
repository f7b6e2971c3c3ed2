package main

import (
	"slices"
	"testing"

	"github.com/warden-run/warden/tool"
)

// TestRaisedTopics: install's suggestion is exactly the request, and when
// raising the level would raise topics granted today too, those are named.
func TestRaisedTopics(t *testing.T) {
	caps := func(level tool.MemoryAccess, topics ...string) tool.Capabilities {
		return tool.Capabilities{Memory: level, MemoryTopics: topics}
	}
	for _, tc := range []struct {
		granted, missing tool.Capabilities
		want             []string
	}{
		{caps(tool.MemoryRead, "arch"), caps(tool.MemoryReadWrite, "notes"), []string{"arch"}},
		{caps(tool.MemoryRead, "arch", "notes"), caps(tool.MemoryReadWrite, "notes"), []string{"arch"}},
		{caps(tool.MemoryNone), caps(tool.MemoryReadWrite, "notes"), nil},
		{caps(tool.MemoryReadWrite, "arch"), caps(tool.MemoryNone, "notes"), nil},
	} {
		if got := raisedTopics(tc.granted, tc.missing); !slices.Equal(got, tc.want) {
			t.Errorf("raisedTopics(%s, %s) = %q, want %q", tc.granted.Summary(), tc.missing.Summary(), got, tc.want)
		}
	}
}
