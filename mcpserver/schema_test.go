package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// hostileSchemaTools are descriptors whose schemas crash (an in-place
// cycle) or stall (exponential anyOf) jsonschema-go's validator.
func hostileSchemaTools() []tool.Descriptor {
	var defs []string
	for i := 0; i < 40; i++ {
		defs = append(defs, fmt.Sprintf(`"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"a40":{"type":"integer"}`)
	exponential := `{"type":"object","properties":{"x":{"$ref":"#/$defs/a0"}},"$defs":{` + strings.Join(defs, ",") + `}}`
	cyclic := `{"type":"object","allOf":[{"$ref":"#"}],"properties":{"x":{"type":"string","x-mcp-header":"X"}}}`
	return []tool.Descriptor{
		{Name: "cyclic", Description: "d", InputSchema: json.RawMessage(cyclic), OutputSchema: json.RawMessage(cyclic)},
		{Name: "exponential", Description: "d", InputSchema: json.RawMessage(exponential), OutputSchema: json.RawMessage(exponential)},
	}
}

// TestGoSDKNeverValidatesToolSchemas proves that the go-sdk, server and
// client, only carries our schemas: handed the hostile ones directly
// (past warden's own refusal), it lists them and routes calls to them with
// arguments and structured results the schemas would send jsonschema-go
// into a stack overflow or exponential time, and the server lives on.
func TestGoSDKNeverValidatesToolSchemas(t *testing.T) {
	tools := newFakeTools(desc("ok"))
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		return &tool.Result{Content: []tool.Content{tool.TextContent("called " + c.Name)},
			StructuredContent: json.RawMessage(`{"x":"a string"}`)}, nil
	})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s, _ := newServer(t, tools, Options{})
			for _, d := range hostileSchemaTools() {
				if err := s.addTool(&d); err != nil {
					t.Fatalf("addTool %s: %v", d.Name, err)
				}
			}
			cs := connect(t, s, tr, nil)
			var names []string
			for tl, err := range cs.Tools(context.Background(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tl.Name)
			}
			if !slices.Contains(names, "cyclic") || !slices.Contains(names, "exponential") {
				t.Fatalf("listed %v", names)
			}
			for _, name := range []string{"cyclic", "exponential", "ok"} {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"x": "a string"}})
				if err != nil || res.IsError {
					t.Fatalf("call %s: %+v %v", name, res, err)
				}
			}
		})
	}
}

// TestResyncSkipsHostileSchemas: through the normal path the tools never
// reach the go-sdk: Validate refuses them and the log says why.
func TestResyncSkipsHostileSchemas(t *testing.T) {
	tools := newFakeTools(append(hostileSchemaTools(), desc("ok"))...)
	s, logs := newServer(t, tools, Options{})
	cs := connect(t, s, transports[0], nil)
	var names []string
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"ok"}) {
		t.Fatalf("listed %v, want only ok", names)
	}
	for _, want := range []string{"tool=cyclic", "form a cycle", "tool=exponential", "evaluation steps"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}
