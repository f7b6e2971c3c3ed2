package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wardenWithPath runs the real binary like wardenCLI, with PATH replaced:
// the language servers installed are exactly those in path.
func wardenWithPath(t *testing.T, e *env, path string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var env []string
	for _, kv := range childEnv() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return wardenCLIEnv(t, e, append(env, "PATH="+path), args...)
}

// TestToolsMarksMissingLanguageServers: `warden tools` names every LSP tool
// granted a language whose server is not installed, with the command that
// installs it (in the table and in -o json), and a call in that language
// gets the same answer; a granted language whose server is installed is
// not named.
func TestToolsMarksMissingLanguageServers(t *testing.T) {
	e := newEnv(t, "")
	wasm, err := os.ReadFile(filepath.Join(bundledTools(t), "lsp.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.tools, "lsp.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "app.py"), []byte("def main():\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A PATH holding a "gopls" and nothing else: go is installed, python
	// (pyright-langserver) is not.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "gopls"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"symbols", "hover"} {
		if _, stderr, code := wardenCLI(t, e, "grant", tool, "--module", "lsp", "lsp=go", "lsp=python", "fs.read=."); code != 0 {
			t.Fatalf("grant %s: exit %d: %s", tool, code, stderr)
		}
	}
	const missing = "the python language server is not installed (pyright-langserver is not in PATH); install it with: npm i -g pyright"

	stdout, stderr, code := wardenWithPath(t, e, bin, "tools")
	if code != 0 {
		t.Fatalf("warden tools: exit %d\n%s\n%s", code, stdout, stderr)
	}
	want := "\nLANGUAGE SERVERS NOT INSTALLED (2; the tool's calls in that language fail until installed):\n" +
		"  hover lsp=python: " + missing + "\n" +
		"  symbols lsp=python: " + missing + "\n"
	if !strings.HasSuffix(stdout, want) {
		t.Fatalf("warden tools does not end with the missing servers:\n%s\nwant the end:\n%s", stdout, want)
	}

	stdout, stderr, code = wardenWithPath(t, e, bin, "tools", "-o", "json")
	if code != 0 {
		t.Fatalf("warden tools -o json: exit %d\n%s", code, stderr)
	}
	var list struct {
		ServersMissing []struct{ Tool, Language, Error string } `json:"serversMissing"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.ServersMissing) != 2 || list.ServersMissing[0].Tool != "hover" || list.ServersMissing[1].Tool != "symbols" ||
		list.ServersMissing[1].Language != "python" || list.ServersMissing[1].Error != missing {
		t.Fatalf("serversMissing: %+v", list.ServersMissing)
	}

	// A call in that language: the same words. (The tool passes on the
	// capability's unavailable error; warden reports a kind a tool names
	// as failed, "reported by tool".)
	stdout, _, code = wardenWithPath(t, e, bin, "call", "symbols", `{"path":"app.py"}`)
	if code != 1 || !strings.Contains(stdout, `"kind": "failed"`) || !strings.Contains(stdout, "unavailable: "+missing) {
		t.Fatalf("warden call symbols app.py: exit %d\n%s", code, stdout)
	}
}

// TestLanguageServerMemoryReported: after a call starts a language server,
// `warden serve --http` reports it, with the resident memory of its process
// group, in /healthz (lspServers) and /metrics (warden_lsp_servers,
// warden_lsp_memory_bytes), for each language whose server ran: gopls, and
// pyright when it is installed (.ci/run installs it).
func TestLanguageServerMemoryReported(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("memory of a process group is read from /proc")
	}
	const token = "e2e-lsp-metrics-token"
	// pyright loads a project in seconds, longer on a loaded machine.
	e := newEnv(t, "lsp: {timeout: 3m}")
	wasm, err := os.ReadFile(filepath.Join(bundledTools(t), "lsp.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.tools, "lsp.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":  "module example.com/m\n\ngo 1.21\n",
		"main.go": "package main\n\nfunc main() {}\n",
		"app.py":  "def main():\n    pass\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	langs := []string{"go"}
	if _, err := exec.LookPath("pyright-langserver"); err == nil {
		langs = append(langs, "python")
	} else {
		t.Log("pyright-langserver is not installed (npm i -g pyright): checking go only")
	}
	args := []string{"grant", "symbols", "--module", "lsp", "fs.read=."}
	for _, l := range langs {
		args = append(args, "lsp="+l)
	}
	if _, stderr, code := wardenCLI(t, e, args...); code != 0 {
		t.Fatalf("grant: exit %d: %s", code, stderr)
	}
	e.withConfig(t, "server:\n  metrics: true\n  token: "+token+"\n")
	addr := freeAddr(t)
	hc := &http.Client{Transport: bearer{token}}
	s := startServeAs(t, e, addr, hc, "--http="+addr)
	cs := s.connect(t, "", nil, hc)
	for _, file := range map[string]string{"go": "main.go", "python": "app.py"} {
		if file == "app.py" && len(langs) == 1 {
			continue
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "symbols", Arguments: map[string]any{"path": file}})
		if err != nil || res.IsError {
			t.Fatalf("symbols %s: %v %+v", file, err, res)
		}
	}

	status, body := getMetrics(t, "http://"+addr+"/healthz", token)
	if status != http.StatusOK {
		t.Fatalf("/healthz: %d %s", status, body)
	}
	var h struct {
		LSPServers []struct {
			Language    string `json:"language"`
			PID         int    `json:"pid"`
			MemoryBytes uint64 `json:"memoryBytes"`
		} `json:"lspServers"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatal(err)
	}
	if len(h.LSPServers) != len(langs) {
		t.Fatalf("/healthz lspServers: %+v, want one per language of %v", h.LSPServers, langs)
	}
	for i, srv := range h.LSPServers {
		// Sorted by language; the pid is a live process, and a language
		// server holds more than a MiB.
		if srv.Language != langs[i] || srv.PID <= 0 || rssBytes(srv.PID) == 0 || srv.MemoryBytes < 1<<20 {
			t.Errorf("/healthz lspServers[%d]: %+v (its process's RSS: %d)", i, srv, rssBytes(srv.PID))
		}
	}

	status, body = getMetrics(t, "http://"+addr+"/metrics", token)
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d", status)
	}
	for _, l := range langs {
		if !strings.Contains(body, `warden_lsp_servers{language="`+l+`"} 1`+"\n") {
			t.Errorf("/metrics lacks warden_lsp_servers for %s", l)
		}
		prefix := `warden_lsp_memory_bytes{language="` + l + `"} `
		i := strings.Index(body, prefix)
		if i < 0 {
			t.Errorf("/metrics lacks warden_lsp_memory_bytes for %s", l)
			continue
		}
		v, _, _ := strings.Cut(body[i+len(prefix):], "\n")
		if n, err := strconv.ParseFloat(v, 64); err != nil || n < 1<<20 {
			t.Errorf("warden_lsp_memory_bytes for %s: %q", l, v)
		}
	}
}
