package config

import (
	"strings"
	"testing"
	"time"
)

func TestGatesExposeAndClientGrants(t *testing.T) {
	c, err := Load(writeConfig(t, `
tools:
  grants:
    ask: {client: [elicit, Sample]}
  gates:
    "fs_*": {action: block, message: no}
    "fs_w*": {action: confirm}
    fs_write_notes: {action: allow}
    lookup: {action: result, result: "off today"}
  expose: ["fs_*", lookup]
  hide: ["*_debug"]
security:
  confirm: "off"
`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"fs_read":        "block:fs_*",
		"fs_write":       "confirm:fs_w*", // the longest pattern wins
		"FS_Write_Notes": "allow:fs_write_notes",
		"lookup":         "result:lookup",
		"other":          ":",
	} {
		g, key, _ := c.GateFor(name)
		if got := g.Action + ":" + key; got != want {
			t.Errorf("GateFor(%s) = %s, want %s", name, got, want)
		}
	}
	for name, want := range map[string]bool{"fs_read": true, "lookup": true, "other": false, "fs_debug": false} {
		if got := c.Exposed(name); got != want {
			t.Errorf("Exposed(%s) = %v, want %v", name, got, want)
		}
	}
	if c.ConfirmDestructive() || !c.PermissionPrompts() {
		t.Errorf("security.confirm off / prompts default: %v %v", c.ConfirmDestructive(), c.PermissionPrompts())
	}
	if g, _ := c.Grants("ask", "ask"); len(g.Client) != 2 || !g.HasClient("sample") {
		t.Errorf("client grant = %v", g.Client)
	}
	if c.ClientWait() != DefaultClientWait {
		t.Errorf("client_wait default = %s", c.ClientWait())
	}
}

func TestGatesRefusedWithTheKey(t *testing.T) {
	for body, want := range map[string]string{
		"tools: {gates: {x: {action: maybe}}}":        "tools.gates.x.action: must be allow, block, confirm or result",
		"tools: {gates: {x: {action: result}}}":       "tools.gates.x.result: a result gate needs the text",
		`tools: {gates: {"[x": {action: block}}}`:     "tools.gates.[x",
		`tools: {hide: ["[x"]}`:                       "tools.hide",
		"tools: {grants: {x: {client: [telepathy]}}}": `tools.grants.x.client: unknown client feature "telepathy"`,
		"security: {prompts: sometimes}":              "security.prompts: must be on or off",
		"tools: {defaults: {client_wait: -1s}}":       "tools.defaults.client_wait: must not be negative",
	} {
		_, err := Load(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
	c, err := Load(writeConfig(t, "tools: {defaults: {client_wait: 30s}}"))
	if err != nil || c.ClientWait() != 30*time.Second {
		t.Fatalf("client_wait 30s: %v %v", err, c)
	}
}
