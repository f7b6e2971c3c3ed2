// Command conformance provides, as one warden tool module, the fixture tools
// that the MCP conformance suite (npm @modelcontextprotocol/conformance)
// calls in its server scenarios. .ci/conformance/run.sh serves it with
// `warden serve --http` and runs the suite against it.
//
// Names, arguments and results follow the suite's scenario descriptions and
// its reference server. The tools that ask the client (sampling,
// elicitation, roots, input-required results) are in client.go; those of the
// Tasks extension's scenarios (SEP-2663) are in tasks.go.
package main

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() {
	warden.Register(fixtures...)
	warden.Register(clientFixtures...)
	warden.Register(taskFixtures...)
}

// main is never called: the module is a reactor whose init registers the tools.
func main() {}

// Minimal media, the same bytes the suite's reference server returns.
const (
	pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	wavBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

// noArgs is the input schema of a tool that takes no arguments.
var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

// jsonSchema202012 is the suite's JSON Schema 2020-12 fixture (SEP-1613,
// SEP-2106); it must reach tools/list unchanged.
var jsonSchema202012 = json.RawMessage(`{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"$defs": {
		"address": {
			"$anchor": "addressDef",
			"type": "object",
			"properties": {"street": {"type": "string"}, "city": {"type": "string"}}
		}
	},
	"properties": {
		"name": {"type": "string"},
		"address": {"$ref": "#/$defs/address"},
		"contactMethod": {"type": "string", "enum": ["phone", "email"]},
		"phone": {"type": "string"},
		"email": {"type": "string"}
	},
	"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
	"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
	"then": {"required": ["phone"]},
	"else": {"required": ["email"]},
	"additionalProperties": false
}`)

// fixture is a tool defined by a function.
type fixture struct {
	name, description string
	schema            json.RawMessage
	// client lists the client features the tool asks for (descriptor
	// capabilities; config grants them in .ci/conformance/run.sh).
	client []string
	// task is the tool's execution.taskSupport (tasks.go); empty leaves
	// the field out, which means forbidden.
	task string
	call func(ctx *warden.Context, args json.RawMessage) (*tool.Result, error)
}

func (f fixture) Descriptor() tool.Descriptor {
	schema := f.schema
	if schema == nil {
		schema = noArgs
	}
	d := tool.Descriptor{Name: f.name, Description: f.description, InputSchema: schema, Category: "conformance",
		Capabilities: tool.Capabilities{Client: f.client}}
	if f.task != "" {
		d.Execution = &tool.Execution{TaskSupport: f.task}
	}
	return d
}

func (f fixture) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	return f.call(ctx, args)
}

func mustDecode(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

var fixtures = []warden.Tool{
	fixture{
		name: "test_simple_text", description: "Tests simple text content response",
		call: func(*warden.Context, json.RawMessage) (*tool.Result, error) {
			return warden.Text("This is a simple text response for testing."), nil
		},
	},
	fixture{
		name: "test_image_content", description: "Tests image content response",
		call: func(*warden.Context, json.RawMessage) (*tool.Result, error) {
			return warden.Image(mustDecode(pngBase64), "image/png"), nil
		},
	},
	fixture{
		name: "test_audio_content", description: "Tests audio content response",
		call: func(*warden.Context, json.RawMessage) (*tool.Result, error) {
			return warden.Audio(mustDecode(wavBase64), "audio/wav"), nil
		},
	},
	fixture{
		name: "test_embedded_resource", description: "Tests embedded resource content response",
		call: func(*warden.Context, json.RawMessage) (*tool.Result, error) {
			return warden.EmbeddedText("test://embedded-resource", "text/plain", "This is an embedded resource content."), nil
		},
	},
	fixture{
		name: "test_multiple_content_types", description: "Tests response with multiple content types (text, image, resource)",
		call: func(*warden.Context, json.RawMessage) (*tool.Result, error) {
			return warden.Result(
				warden.TextBlock("Multiple content types test:"),
				warden.ImageBlock(mustDecode(pngBase64), "image/png"),
				warden.EmbeddedTextBlock("test://mixed-content-resource", "application/json", `{"test":"data","value":123}`),
			), nil
		},
	},
	fixture{
		name: "test_tool_with_logging", description: "Tests tool that emits log messages during execution",
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			// The pauses let a client see the notifications arrive one by one.
			ctx.Log(warden.LevelInfo, "Tool execution started")
			time.Sleep(50 * time.Millisecond)
			ctx.Log(warden.LevelInfo, "Tool processing data")
			time.Sleep(50 * time.Millisecond)
			ctx.Log(warden.LevelInfo, "Tool execution completed")
			return warden.Text("Tool with logging executed successfully"), nil
		},
	},
	fixture{
		name: "test_tool_with_progress", description: "Tests tool that reports progress notifications",
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			for _, done := range []float64{0, 50, 100} {
				ctx.Progress(done, 100, "Completed step")
				time.Sleep(50 * time.Millisecond)
			}
			return warden.Text("Progress test completed"), nil
		},
	},
	fixture{
		name: "test_error_handling", description: "Tests error response handling",
		call: func(*warden.Context, json.RawMessage) (*tool.Result, error) {
			return nil, warden.Failed("This tool intentionally returns an error for testing")
		},
	},
	fixture{
		name:        "json_schema_2020_12_tool",
		description: "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613, SEP-2106)",
		schema:      jsonSchema202012,
		call: func(_ *warden.Context, args json.RawMessage) (*tool.Result, error) {
			return warden.Textf("Received: %s", args), nil
		},
	},
	fixture{
		name:        "test_streaming_elicitation",
		description: "Streams progress notifications while a call is in flight; the response stream must carry only notifications (SEP-2575)",
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			for done := 1.0; done <= 3; done++ {
				ctx.Progress(done, 3, "streaming")
				time.Sleep(20 * time.Millisecond)
			}
			return warden.Text("stream observed: result frames only, no top-level requests"), nil
		},
	},
	fixture{
		name:        "test_logging_tool",
		description: "Emits a log line, which must not reach a client that did not set _meta.../logLevel (SEP-2575)",
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			ctx.Log(warden.LevelInfo, "test_logging_tool executed")
			return warden.Text("Log attempted; warden forwards it only at the client's level."), nil
		},
	},
	fixture{
		name:        "test_x_mcp_header",
		description: "Mirrors the region argument into the Mcp-Param-Region header (SEP-2243)",
		schema: json.RawMessage(`{"type":"object","properties":{
			"region":{"type":"string","description":"mirrored into Mcp-Param-Region","x-mcp-header":"Region"},
			"level":{"type":"integer","description":"non-mirrored argument"}}}`),
		call: func(_ *warden.Context, args json.RawMessage) (*tool.Result, error) {
			return warden.Textf("Received: %s", args), nil
		},
	},
}
