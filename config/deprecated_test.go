package config

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestDeprecations: a client grant of sample or roots, which MCP
// 2026-07-28 deprecates, still loads and is listed with its key and what
// to use instead; WarnDeprecated logs each once, and a reload that keeps
// it does not log it again.
func TestDeprecations(t *testing.T) {
	c, err := Load(writeConfig(t, `
tools:
  grants:
    ask: {client: [elicit, Sample]}
    where: {client: [roots]}
    plain: {client: [elicit]}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Deprecations()
	want := []Deprecation{
		{Key: "tools.grants.ask.client", Value: "Sample", Why: "MCP 2026-07-28 deprecates sampling (SEP-2577)",
			Instead: "the tool calls its model provider's API itself, under a net grant (tools.grants.ask.net)"},
		{Key: "tools.grants.where.client", Value: "roots", Why: "MCP 2026-07-28 deprecates roots (SEP-2577)",
			Instead: "give the tool directories and files as arguments, or in config (project.roots, tools.grants.where.fs)"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Deprecations = %+v\nwant %+v", got, want)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	WarnDeprecated(log, c, nil)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `level=WARN msg="config uses a deprecated MCP feature; it still works"`) ||
		!strings.Contains(lines[0], `key=tools.grants.ask.client value=Sample why="MCP 2026-07-28 deprecates sampling (SEP-2577)" instead="the tool calls its model provider's API itself, under a net grant (tools.grants.ask.net)"`) ||
		!strings.Contains(lines[1], "key=tools.grants.where.client value=roots") {
		t.Fatalf("logged:\n%s", buf.String())
	}
	buf.Reset()
	WarnDeprecated(log, c, c)
	if buf.Len() != 0 {
		t.Errorf("a reload that keeps the settings logged them again:\n%s", buf.String())
	}
	if d, err := Load(writeConfig(t, "tools: {grants: {ask: {client: [elicit]}}}")); err != nil || len(d.Deprecations()) != 0 {
		t.Errorf("elicit alone: %v %+v", err, d.Deprecations())
	}
}
