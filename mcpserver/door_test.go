package mcpserver

import (
	"testing"

	"github.com/warden-run/warden/tool"
)

// TestPassAdmits: a Pass admits only the request the door made it for; no
// Pass admits nothing; the operator's LocalPass admits what it is given.
func TestPassAdmits(t *testing.T) {
	door := &Pass{method: MethodReadResource, subject: "danger"}
	for _, c := range []struct {
		pass            *Pass
		method, subject string
		want            string
	}{
		{door, MethodReadResource, "danger", ""},
		{door, MethodReadResource, "other", `resources/read as tool "other" was admitted by the server's request pipeline as resources/read as tool "danger"; refused`},
		{door, MethodGetPrompt, "danger", `prompts/get as tool "danger" was admitted by the server's request pipeline as resources/read as tool "danger"; refused`},
		{nil, MethodCallTool, "danger", `tools/call as tool "danger" did not come through the server's request pipeline; refused`},
		{LocalPass(), MethodCallTool, "danger", ""},
	} {
		err := c.pass.Admits(c.method, c.subject)
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v admits %s as %s: %v", c.pass, c.method, c.subject, err)
			}
			continue
		}
		if te, ok := err.(*tool.Error); !ok || te.Kind != tool.KindInternal || te.Message != c.want {
			t.Errorf("%+v admits %s as %s: %v, want internal: %s", c.pass, c.method, c.subject, err, c.want)
		}
	}
}
