package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/internal/schema"
	"github.com/warden-run/warden/tool"
)

// recorder is a host that records what a call reports.
type recorder struct {
	logs     []string
	progress []tool.Progress
}

func (r *recorder) Log(level warden.Level, message string) { r.logs = append(r.logs, message) }
func (r *recorder) Progress(p tool.Progress)               { r.progress = append(r.progress, p) }
func (r *recorder) Capability(string, []byte) []byte {
	return []byte(`{"error":{"kind":"denied","message":"none"}}`)
}

func call(t *testing.T, name string, host warden.HostFuncs) string {
	t.Helper()
	return string(warden.NewRegistry(fixtures...).Dispatch([]byte(`{"tool":"`+name+`","arguments":{}}`), host))
}

func TestFixtureResponses(t *testing.T) {
	for name, want := range map[string]string{
		"test_simple_text":         `{"content":[{"type":"text","text":"This is a simple text response for testing."}]}`,
		"test_image_content":       `{"content":[{"type":"image","data":"` + pngBase64 + `","mimeType":"image/png"}]}`,
		"test_audio_content":       `{"content":[{"type":"audio","data":"` + wavBase64 + `","mimeType":"audio/wav"}]}`,
		"test_embedded_resource":   `{"content":[{"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}}]}`,
		"test_error_handling":      `{"error":{"kind":"failed","message":"This tool intentionally returns an error for testing"}}`,
		"json_schema_2020_12_tool": `{"content":[{"type":"text","text":"Received: {}"}]}`,
	} {
		if got := call(t, name, nil); got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", name, got, want)
		}
	}
	var mixed tool.Result
	if err := json.Unmarshal([]byte(call(t, "test_multiple_content_types", nil)), &mixed); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range mixed.Content {
		types = append(types, c.Type)
	}
	if !reflect.DeepEqual(types, []string{"text", "image", "resource"}) {
		t.Errorf("mixed content types %v", types)
	}
}

func TestFixtureNotifications(t *testing.T) {
	var logs recorder
	if got := call(t, "test_tool_with_logging", &logs); !strings.Contains(got, "executed successfully") {
		t.Errorf("logging tool: %s", got)
	}
	if want := []string{"Tool execution started", "Tool processing data", "Tool execution completed"}; !reflect.DeepEqual(logs.logs, want) {
		t.Errorf("logs %q, want %q", logs.logs, want)
	}
	var progress recorder
	call(t, "test_tool_with_progress", &progress)
	if len(progress.progress) != 3 || progress.progress[0].Progress != 0 || progress.progress[2].Progress != 100 || progress.progress[2].Total != 100 {
		t.Errorf("progress %+v", progress.progress)
	}
}

func TestFixtureDescriptorsAreValid(t *testing.T) {
	for _, d := range warden.NewRegistry(fixtures...).Descriptors() {
		if _, err := schema.CompileDescriptor(&d); err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
	}
	var names []string
	for _, d := range warden.NewRegistry(fixtures...).Descriptors() {
		names = append(names, d.Name)
	}
	// The suite looks tools up by these exact names.
	want := []string{"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
		"test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
		"json_schema_2020_12_tool", "test_streaming_elicitation", "test_logging_tool", "test_x_mcp_header"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("fixtures %v, want %v", names, want)
	}
}

// TestTaskFixtures: the Tasks extension scenarios' fixtures have the names
// and task support the scenarios require, and answer as they describe.
func TestTaskFixtures(t *testing.T) {
	reg := warden.NewRegistry(taskFixtures...)
	support := map[string]string{}
	for _, d := range reg.Descriptors() {
		if _, err := schema.CompileDescriptor(&d); err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
		support[d.Name] = d.TaskSupport()
	}
	want := map[string]string{
		"greet": tool.TaskForbidden, "slow_compute": tool.TaskOptional, "failing_job": tool.TaskRequired,
		"protocol_error_job": tool.TaskOptional, "confirm_delete": tool.TaskOptional, "multi_input": tool.TaskOptional,
		"test_tool_with_task": tool.TaskRequired,
	}
	if !reflect.DeepEqual(support, want) {
		t.Errorf("task support %v, want %v", support, want)
	}
	dispatch := func(name, args string, host warden.HostFuncs) string {
		return string(reg.Dispatch([]byte(`{"tool":"`+name+`","arguments":`+args+`}`), host))
	}
	if got, want := dispatch("greet", `{"name":"World"}`, nil), `{"content":[{"type":"text","text":"Hello, World!"}]}`; got != want {
		t.Errorf("greet: %s, want %s", got, want)
	}
	if got, want := dispatch("slow_compute", `{"seconds":0,"label":"instant"}`, nil), `{"content":[{"type":"text","text":"computed instant in 0s"}]}`; got != want {
		t.Errorf("slow_compute 0 s: %s, want %s", got, want)
	}
	var progress recorder
	dispatch("slow_compute", `{"seconds":0.5,"label":"half"}`, &progress)
	if len(progress.progress) != 2 || progress.progress[1] != (tool.Progress{Progress: 0.5, Total: 0.5, Message: "working"}) {
		t.Errorf("slow_compute 0.5 s progress %+v, want two steps ending at 0.5 of 0.5", progress.progress)
	}
	if got, want := dispatch("failing_job", `{}`, &recorder{}), `{"error":{"kind":"failed","message":"failing_job failed on purpose"}}`; got != want {
		t.Errorf("failing_job: %s, want %s", got, want)
	}
}
