package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/hostfuncs/memory"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

func loadModule(t *testing.T, rt *runtime.Runtime, name string, wasm []byte, limits runtime.Limits) *runtime.Module {
	t.Helper()
	m, err := rt.Load(context.Background(), name, wasm, limits)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return m
}

func wantErrKind(t *testing.T, err *tool.Error, kind tool.Kind, message string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", kind)
	}
	if err.Kind != kind || !strings.Contains(err.Message, message) {
		t.Fatalf("error = %s: %s, want %s containing %q", err.Kind, err.Message, kind, message)
	}
}

// TestConformanceFeatures reads the conformance fixture's resources,
// template, prompts and completion through the runtime, as MCP serves them.
func TestConformanceFeatures(t *testing.T) {
	rt := newRuntime(t, runtime.Options{Capabilities: stubCapabilities()})
	m := loadModule(t, rt, "conformance", testwasm.BuildGo(t, "../tools-wasm/conformance"), runtime.Limits{})
	f := m.Features()
	if len(f.Resources) != 3 || len(f.ResourceTemplates) != 1 || len(f.Prompts) != 5 {
		t.Fatalf("features = %d resources, %d templates, %d prompts", len(f.Resources), len(f.ResourceTemplates), len(f.Prompts))
	}
	ctx := context.Background()
	res, err := m.ReadResource(ctx, "test://static-text", runtime.CallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Contents[0]; c.Text == nil || *c.Text != "This is the content of the static text resource." || c.MimeType != "text/plain" || c.URI != "test://static-text" {
		t.Fatalf("static-text = %+v", c)
	}
	res, err = m.ReadResource(ctx, "test://static-binary", runtime.CallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Contents[0]; c.Blob == nil || c.MimeType != "image/png" {
		t.Fatalf("static-binary = %+v", c)
	}
	res, err = m.ReadResource(ctx, "test://template/123/data", runtime.CallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Contents[0]; c.Text == nil || *c.Text != `{"id":"123","templateTest":true,"data":"Data for ID: 123"}` || c.MimeType != "application/json" {
		t.Fatalf("template = %+v", c)
	}
	_, err = m.ReadResource(ctx, "test://nothing", runtime.CallRequest{})
	wantErrKind(t, err, tool.KindNotFound, "serves no resource")

	p, err := m.GetPrompt(ctx, "test_prompt_with_arguments", map[string]string{"arg1": "hello", "arg2": "world"}, runtime.CallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Messages) != 1 || p.Messages[0].Content.Text != "Prompt with arguments: arg1='hello', arg2='world'" || p.Messages[0].Role != "user" {
		t.Fatalf("prompt = %+v", p)
	}
	_, err = m.GetPrompt(ctx, "test_prompt_with_arguments", map[string]string{"arg1": "hello"}, runtime.CallRequest{})
	wantErrKind(t, err, tool.KindInvalidArguments, `missing required argument "arg2"`)
	_, err = m.GetPrompt(ctx, "test_simple_prompt", map[string]string{"x": "y"}, runtime.CallRequest{})
	wantErrKind(t, err, tool.KindInvalidArguments, `has no argument "x"`)
	p, err = m.GetPrompt(ctx, "test_prompt_with_embedded_resource", map[string]string{"resourceUri": "test://example-resource"}, runtime.CallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Messages[0].Content.Resource; r == nil || r.URI != "test://example-resource" || r.Text != "Embedded resource content for testing." || p.Messages[1].Content.Text != "Please process the embedded resource above." {
		t.Fatalf("embedded prompt = %+v", p)
	}
	p, err = m.GetPrompt(ctx, "test_prompt_with_image", nil, runtime.CallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Messages[0].Content.Type != "image" || p.Messages[0].Content.MimeType != "image/png" || p.Messages[1].Content.Text != "Please analyze the image above." {
		t.Fatalf("image prompt = %+v", p)
	}

	c, err := m.Complete(ctx, tool.CompleteRequest{Ref: tool.CompleteRef{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
		Argument: tool.CompleteArgument{Name: "arg1", Value: "pa"}}, runtime.CallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Values, ",") != "paris,park,party" {
		t.Fatalf("completion = %+v", c)
	}
	_, err = m.Complete(ctx, tool.CompleteRequest{Ref: tool.CompleteRef{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
		Argument: tool.CompleteArgument{Name: "nope"}}, runtime.CallRequest{})
	wantErrKind(t, err, tool.KindInvalidArguments, `no argument "nope"`)
	c, err = m.Complete(ctx, tool.CompleteRequest{Ref: tool.CompleteRef{Type: "ref/resource", URI: "test://template/{id}/data"},
		Argument: tool.CompleteArgument{Name: "id", Value: "1"}}, runtime.CallRequest{})
	if err != nil || len(c.Values) != 0 {
		t.Fatalf("template completion = %+v, %v", c, err)
	}
}

// TestHostileFeatures: every misbehaviour of a module's resources, prompts
// and completions is a typed error, and the module keeps serving.
func TestHostileFeatures(t *testing.T) {
	dir := t.TempDir()
	mem, err := memory.New(memory.Config{ProjectRoot: dir, Home: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	caps := stubCapabilities(mem)
	rt := newRuntime(t, runtime.Options{Capabilities: caps})
	m := loadModule(t, rt, "resources", goGuest(t, "resources"), runtime.Limits{Timeout: 2 * time.Second, MaxOutput: 1 << 20})
	ctx := context.Background()
	ok := func() {
		t.Helper()
		res, err := m.ReadResource(ctx, "fx://ok", runtime.CallRequest{})
		if err != nil || *res.Contents[0].Text != "fine" {
			t.Fatalf("fx://ok after a failure = %+v, %v", res, err)
		}
	}
	cases := []struct {
		uri     string
		kind    tool.Kind
		message string
	}{
		{"fx://both", tool.KindBadOutput, "both text and blob"},
		{"fx://badblob", tool.KindBadOutput, "not base64"},
		{"fx://empty", tool.KindBadOutput, "no contents"},
		{"fx://huge", tool.KindBadOutput, "over the output limit"},
		{"fx://trap", tool.KindTrapped, "went deeper than 20000 nested calls"},
		{"fx://loop", tool.KindTimeout, "did not finish within 2s"},
		{"fx://kind", tool.KindNotFound, "nothing at fx://kind"},
		{"fx://memory", tool.KindDenied, "memtool"},
		{"fx://impostor", tool.KindBadOutput, `resource "fx://impostor" contents[0]: uri "test://static-text" is not a resource of module resources; a module answers only for its own resources`},
	}
	for _, c := range cases {
		t.Run(strings.TrimPrefix(c.uri, "fx://"), func(t *testing.T) {
			_, err := m.ReadResource(ctx, c.uri, runtime.CallRequest{})
			wantErrKind(t, err, c.kind, c.message)
			ok()
		})
	}
	t.Run("template", func(t *testing.T) {
		res, err := m.ReadResource(ctx, "fx://item/42", runtime.CallRequest{})
		if err != nil || *res.Contents[0].Text != "item 42" {
			t.Fatalf("template = %+v, %v", res, err)
		}
	})
	t.Run("siblings", func(t *testing.T) {
		// Items naming the module's own resources, a template's match
		// included, are its to give.
		res, err := m.ReadResource(ctx, "fx://siblings", runtime.CallRequest{})
		if err != nil || len(res.Contents) != 3 || res.Contents[1].URI != "fx://ok" || res.Contents[2].URI != "fx://item/9" {
			t.Fatalf("siblings = %+v, %v", res, err)
		}
	})
	t.Run("grants", func(t *testing.T) {
		if err := os.MkdirAll(filepath.Join(dir, ".warden", "memories"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".warden", "memories", "notes.md"), []byte("# notes"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := m.ReadResource(ctx, "fx://memory", runtime.CallRequest{Grants: tool.Capabilities{Memory: tool.MemoryRead}})
		if err != nil || *res.Contents[0].Text != "# notes" {
			t.Fatalf("granted read = %+v, %v", res, err)
		}
	})
	t.Run("prompts", func(t *testing.T) {
		_, err := m.GetPrompt(ctx, "badrole", nil, runtime.CallRequest{})
		wantErrKind(t, err, tool.KindBadOutput, `role "system"`)
		_, err = m.GetPrompt(ctx, "panics", nil, runtime.CallRequest{})
		wantErrKind(t, err, tool.KindFailed, "prompt fixture panic")
		p, err := m.GetPrompt(ctx, "greet", map[string]string{"who": "you"}, runtime.CallRequest{})
		if err != nil || p.Messages[0].Content.Text != "hello you" {
			t.Fatalf("greet = %+v, %v", p, err)
		}
	})
	t.Run("completions", func(t *testing.T) {
		_, err := m.Complete(ctx, tool.CompleteRequest{Ref: tool.CompleteRef{Type: "ref/prompt", Name: "greet"},
			Argument: tool.CompleteArgument{Name: "tone"}}, runtime.CallRequest{})
		wantErrKind(t, err, tool.KindBadOutput, "101 values")
		c, err := m.Complete(ctx, tool.CompleteRequest{Ref: tool.CompleteRef{Type: "ref/resource", URI: "fx://item/{id}"},
			Argument: tool.CompleteArgument{Name: "id", Value: "7"}}, runtime.CallRequest{})
		if err != nil || strings.Join(c.Values, ",") != "71,72" {
			t.Fatalf("template completion = %+v, %v", c, err)
		}
	})
	ok()
}

// featureWAT is a module whose descriptor declares features, exporting
// only what exports lists besides the tool ABI.
func featureWAT(t *testing.T, doc string, exports ...string) []byte {
	t.Helper()
	const reply = `{"contents":[{"uri":"x://a","text":"a"}]}`
	var extra strings.Builder
	for _, e := range exports {
		fmt.Fprintf(&extra, "\n  (func (export %q) (param i64) (result i64) (i64.or (i64.shl (i64.const 60000) (i64.const 32)) (i64.const %d)))", e, len(reply))
	}
	wat := fmt.Sprintf(`(module
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 61000))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) %s)
  (data (i32.const 60000) %s)
  (func (export "warden_describe") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const %d)))
  (func (export "warden_call") (param i64) (result i64) (i64.const 0))%s)`,
		watString(doc), watString(reply), len(doc), extra.String())
	return testwasm.WATString(t, wat)
}

// TestFeatureDescriptorRefusals: a module that declares what it cannot
// serve, or declares it wrongly, is refused at load naming the entry.
func TestFeatureDescriptorRefusals(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	toolJSON := `{"name":"t","description":"d","inputSchema":{"type":"object"}}`
	cases := []struct {
		name, doc string
		exports   []string
		want      string
	}{
		{"prompt without export", `{"tools":[` + toolJSON + `],"prompts":[{"name":"p","description":"d"}]}`, nil,
			"declares prompts but does not export warden_get_prompt"},
		{"resource without export", `{"tools":[],"resources":[{"uri":"x://a","name":"a"}]}`, nil,
			"declares resources but does not export warden_read_resource"},
		{"relative uri", `{"tools":[` + toolJSON + `],"resources":[{"uri":"a/b","name":"a"}]}`, []string{"warden_read_resource"},
			`resources[0] "a/b": uri "a/b": not an absolute URI`},
		{"duplicate uri", `{"resources":[{"uri":"x://a","name":"a"},{"uri":"x://a","name":"b"}]}`, []string{"warden_read_resource"},
			`resources[1] "x://a": uri is also resources[0]'s`},
		{"bad template", `{"resourceTemplates":[{"uriTemplate":"x://{id","name":"a"}]}`, []string{"warden_read_resource"},
			`resourceTemplates[0] "x://{id": uriTemplate`},
		{"duplicate prompt", `{"prompts":[{"name":"p"},{"name":"p"}]}`, []string{"warden_get_prompt"},
			`prompts[1] "p": name is also prompts[0]'s`},
		{"duplicate argument", `{"prompts":[{"name":"p","arguments":[{"name":"a"},{"name":"a"}]}]}`, []string{"warden_get_prompt"},
			`arguments[1]: name "a" is used twice`},
		{"unknown grant tool", `{"tools":[` + toolJSON + `],"prompts":[{"name":"p","tool":"other"}]}`, []string{"warden_get_prompt"},
			`tool "other" (whose grants it runs under) is not a valid tool of this module`},
		{"nothing", `{"tools":[]}`, nil, "lists no tools, resources or prompts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := rt.Load(context.Background(), "fx", featureWAT(t, c.doc, c.exports...), runtime.Limits{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("load error = %v, want %q", err, c.want)
			}
		})
	}
	// Too many resources.
	var rs []string
	for i := range tool.MaxResources + 1 {
		rs = append(rs, fmt.Sprintf(`{"uri":"x://%d","name":"r"}`, i))
	}
	_, err := rt.Load(context.Background(), "fx", featureWAT(t, `{"resources":[`+strings.Join(rs, ",")+`]}`, "warden_read_resource"), runtime.Limits{})
	if err == nil || !strings.Contains(err.Error(), "over the limit of 1000") {
		t.Fatalf("load error = %v", err)
	}
	// A module with only resources loads; its export answers.
	m, err := rt.Load(context.Background(), "fx", featureWAT(t, `{"resources":[{"uri":"x://a","name":"a"}]}`, "warden_read_resource"), runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	res, terr := m.ReadResource(context.Background(), "x://a", runtime.CallRequest{})
	if terr != nil || *res.Contents[0].Text != "a" {
		t.Fatalf("read = %+v, %v", res, terr)
	}
	// Completions of a module without warden_complete are empty.
	m, err = rt.Load(context.Background(), "fx", featureWAT(t, `{"prompts":[{"name":"p","arguments":[{"name":"a"}]}]}`, "warden_get_prompt"), runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	c, terr := m.Complete(context.Background(), tool.CompleteRequest{Ref: tool.CompleteRef{Type: "ref/prompt", Name: "p"}, Argument: tool.CompleteArgument{Name: "a"}}, runtime.CallRequest{})
	if terr != nil || c.Values == nil || len(c.Values) != 0 {
		t.Fatalf("completion = %+v, %v", c, terr)
	}
	_ = json.Valid
}

// TestMemorySchemeIsWardens: a module declaring a resource or template in
// the memory: scheme (any case) is refused at load, naming each entry: it
// would be read for topics warden does not list and could speak for the
// project memory in what it returns.
func TestMemorySchemeIsWardens(t *testing.T) {
	err := runtime.CheckFeatures(&tool.Features{
		Resources:         []tool.ResourceDescriptor{{URI: "memory://notes", Name: "n"}, {URI: "fx://ok", Name: "ok"}},
		ResourceTemplates: []tool.ResourceTemplateDescriptor{{URITemplate: "MEMORY://{+a}", Name: "a"}},
	})
	want := `descriptor: resources[0] "memory://notes": the memory: scheme is warden's (the project memory); a module declares no resource in it; ` +
		`resourceTemplates[0] "MEMORY://{+a}": the memory: scheme is warden's (the project memory); a module declares no resource in it`
	if err == nil || err.Error() != want {
		t.Fatalf("CheckFeatures = %v\nwant %s", err, want)
	}
	if err := runtime.CheckFeatures(&tool.Features{Resources: []tool.ResourceDescriptor{{URI: "memoryx://a", Name: "a"}}}); err != nil {
		t.Fatalf("memoryx: is not memory: %v", err)
	}
}
