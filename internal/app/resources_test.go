package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/mcpserver"
)

// resourceWorld is a project with the hostcalls fixture (granted memory
// read-write) and the conformance fixture, served over MCP in memory.
func resourceWorld(t *testing.T, memoryResources bool) (*App, *mcp.ClientSession, chan string, chan struct{}) {
	t.Helper()
	return resourceWorldOn(t, memoryResources, "file")
}

// resourceWorldOn is resourceWorld with the memory store on backend.
func resourceWorldOn(t *testing.T, memoryResources bool, backend string) (*App, *mcp.ClientSession, chan string, chan struct{}) {
	t.Helper()
	root := t.TempDir()
	project, tools := filepath.Join(root, "project"), filepath.Join(root, "tools")
	os.MkdirAll(project, 0o755)
	os.MkdirAll(tools, 0o755)
	for name, pkg := range map[string]string{"hostcalls": "../../runtime/testdata/goguest/hostcalls", "conformance": "../../tools-wasm/conformance"} {
		wasm, err := os.ReadFile(testwasm.BuildGoFile(t, pkg))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tools, name+".wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", filepath.Join(root, "home"))
	a, _ := startApp(t, project, fmt.Sprintf(`project:
  root: .
tools:
  dir: ../tools
  cache_dir: %s
  grants:
    hostcalls: {memory: read-write}
server:
  resources:
    memory: %t
memory:
  backend: %q
`, userCacheDir, memoryResources, backend), nil)
	if errs := a.Catalog().LoadTools(context.Background()); len(errs) > 0 {
		t.Fatal(errs)
	}
	s := mcpserver.New(a, a.ServerOptions(mcpserver.Options{Logger: discardLogger()}))
	t.Cleanup(func() { s.Close() })
	updated := make(chan string, 16)
	listChanged := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler:     func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { listChanged <- struct{}{} },
	})
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, st) }()
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return a, cs, updated, listChanged
}

func resourceURIs(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	lr, err := cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range lr.Resources {
		uris = append(uris, r.URI)
	}
	return strings.Join(uris, " ")
}

// TestMemoryResources: with server.resources.memory on, topics are listed,
// read and subscribable; a tool's write notifies the subscribed session
// and changes the list; the modules' own resources and prompts are served
// beside them.
func TestMemoryResources(t *testing.T) {
	t.Run("file", func(t *testing.T) { testMemoryResources(t, "file") })
	t.Run("postgres", func(t *testing.T) { testMemoryResources(t, pg.DB(t)) })
}

func testMemoryResources(t *testing.T, backend string) {
	a, cs, updated, listChanged := resourceWorldOn(t, true, backend)
	ctx := context.Background()
	if got := resourceURIs(t, cs); got != "test://static-binary test://static-text test://watched-resource" {
		t.Fatalf("resources = %s", got)
	}
	lt, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(lt.ResourceTemplates) != 2 {
		t.Fatalf("templates = %+v, %v", lt, err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "memory://arch/db"}); err != nil {
		t.Fatal(err)
	}
	res := call(t, a, "hostcalls", `{"memory":{"op":"set","topic":"arch/db","value":"# DB\n"}}`)
	if res.IsError || !strings.Contains(string(res.StructuredContent), `"size":5`) {
		t.Fatalf("set = %+v %s", res.Error, res.StructuredContent)
	}
	select {
	case uri := <-updated:
		if uri != "memory://arch/db" {
			t.Fatalf("updated %s", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/updated after a memory write")
	}
	select {
	case <-listChanged:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/list_changed after a new topic")
	}
	if got := resourceURIs(t, cs); !strings.Contains(got, "memory://arch/db") {
		t.Fatalf("resources after the write = %s", got)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://arch/db"})
	if err != nil || rr.Contents[0].Text != "# DB\n" || rr.Contents[0].MIMEType != "text/markdown" {
		t.Fatalf("read memory = %+v, %v", rr, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "memory://nothing/here"}); err == nil {
		t.Fatal("read of a missing topic succeeded")
	}
	cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "memory://{+topic}"}, Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "ar"}})
	if err != nil || strings.Join(cr.Completion.Values, ",") != "arch/db" {
		t.Fatalf("memory completion = %+v, %v", cr, err)
	}

	// The module's own features, through the app.
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/9/data"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, `"id":"9"`) {
		t.Fatalf("template read = %+v, %v", rr, err)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_simple_prompt"})
	if err != nil || gp.Messages[0].Content.(*mcp.TextContent).Text != "This is a simple prompt for testing." {
		t.Fatalf("prompt = %+v, %v", gp, err)
	}

	// A delete is an update, and the topic leaves the list.
	call(t, a, "hostcalls", `{"memory":{"op":"delete","topic":"arch/db"}}`)
	select {
	case uri := <-updated:
		if uri != "memory://arch/db" {
			t.Fatalf("updated %s", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/updated after a delete")
	}
	for i := 0; strings.Contains(resourceURIs(t, cs), "memory://"); i++ {
		select {
		case <-listChanged:
		case <-time.After(10 * time.Second):
			t.Fatal("the deleted topic stays listed")
		}
	}
}

// TestMemoryResourcesOff: by default the memory is not served.
func TestMemoryResourcesOff(t *testing.T) {
	a, cs, _, _ := resourceWorld(t, false)
	call(t, a, "hostcalls", `{"memory":{"op":"set","topic":"notes","value":"x"}}`)
	if got := resourceURIs(t, cs); strings.Contains(got, "memory://") {
		t.Fatalf("resources = %s", got)
	}
	lt, err := cs.ListResourceTemplates(context.Background(), nil)
	if err != nil || len(lt.ResourceTemplates) != 1 {
		t.Fatalf("templates = %+v, %v", lt, err)
	}
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "memory://notes"}); err == nil {
		t.Fatal("memory readable with server.resources.memory off")
	}
}
