package warden_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// TestCapabilityShortcuts: each shortcut sends the request docs/abi.md
// documents and reads the reply FakeHost gives, as warden's would look.
func TestCapabilityShortcuts(t *testing.T) {
	binary := []byte{0xff, 0x00, 0xfe}
	host := &warden.FakeHost{
		Files:  map[string][]byte{"data/a.txt": []byte("a b"), "data/bin": binary},
		Memory: map[string]string{"notes": "one\n"},
		Env:    map[string]string{"TOKEN": "s3cret"},
	}
	ctx := warden.NewContext("c1", "", host)

	f, err := warden.ReadFile(ctx, "data/a.txt")
	if err != nil || string(f.Content) != "a b" || f.Size != 3 || f.Path != "data/a.txt" || f.Truncated {
		t.Fatalf("ReadFile = %+v, %v", f, err)
	}
	if f, err := warden.ReadFile(ctx, "data/bin"); err != nil || !bytes.Equal(f.Content, binary) {
		t.Fatalf("ReadFile(binary) = %+v, %v", f, err)
	}
	if _, err := warden.ReadFile(ctx, "data/none"); tool.KindOf(err) != tool.KindNotFound {
		t.Fatalf("ReadFile(missing) = %v, want not_found", err)
	}
	if err := warden.WriteFile(ctx, "out/b", binary); err != nil || !bytes.Equal(host.Files["out/b"], binary) {
		t.Fatalf("WriteFile(binary): %v, stored %q", err, host.Files["out/b"])
	}
	if err := warden.MemoryAppend(ctx, "notes", "two\n"); err != nil {
		t.Fatal(err)
	}
	if v, err := warden.MemoryGet(ctx, "notes"); err != nil || v != "one\ntwo\n" {
		t.Fatalf("MemoryGet = %q, %v", v, err)
	}
	if err := warden.MemorySet(ctx, "todo", "x"); err != nil || host.Memory["todo"] != "x" {
		t.Fatalf("MemorySet: %v, %q", err, host.Memory["todo"])
	}
	if _, err := warden.MemoryGet(ctx, "none"); tool.KindOf(err) != tool.KindNotFound {
		t.Fatalf("MemoryGet(missing) = %v, want not_found", err)
	}
	if v, err := warden.Env(ctx, "TOKEN"); err != nil || v != "s3cret" {
		t.Fatalf("Env = %q, %v", v, err)
	}
	if _, err := warden.Env(ctx, "OTHER"); tool.KindOf(err) != tool.KindDenied {
		t.Fatalf("Env(ungranted) = %v, want denied", err)
	}
}

// TestFakeHostHandleAndRecords: requests FakeHost does not serve reach
// Handle as the tool sent them, and logs and progress are kept in order.
func TestFakeHostHandleAndRecords(t *testing.T) {
	var got []string
	host := &warden.FakeHost{Handle: func(capability string, request []byte) []byte {
		got = append(got, capability+" "+string(request))
		return []byte(`{"result":{"status":200}}`)
	}}
	ctx := warden.NewContext("c1", "", host)
	var reply struct{ Status int }
	if err := warden.Host(ctx, "net", map[string]string{"op": "request", "url": "https://example.com"}, &reply); err != nil || reply.Status != 200 {
		t.Fatalf("Host(net) = %+v, %v", reply, err)
	}
	// Files is nil: fs goes to Handle too.
	if _, err := warden.ReadFile(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	want := []string{`net {"op":"request","url":"https://example.com"}`, `fs {"op":"read","path":"a"}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Handle got %q, want %q", got, want)
	}
	ctx.Logf(warden.LevelWarning, "%d left", 2)
	ctx.Progress(1, 2, "half")
	if logs := host.Logs(); !reflect.DeepEqual(logs, []string{"warning: 2 left"}) {
		t.Fatalf("Logs = %q", logs)
	}
	if p := host.Reports(); len(p) != 1 || p[0] != (tool.Progress{Progress: 1, Total: 2, Message: "half"}) {
		t.Fatalf("Reports = %+v", p)
	}
	// Without Handle, what it does not hold is denied, as an ungranted
	// capability is.
	bare := warden.NewContext("c2", "", &warden.FakeHost{})
	if err := warden.Host(bare, "lsp", json.RawMessage(`{"op":"hover"}`), nil); tool.KindOf(err) != tool.KindDenied {
		t.Fatalf("Host(lsp) without Handle = %v, want denied", err)
	}
}
