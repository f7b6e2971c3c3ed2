package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
)

// BenchmarkLSPModules compares the five LSP tools built as five modules,
// one tool each (e2e/testdata/lsp-single, as they were before), with the
// one module tools-wasm/lsp. Each op starts a fresh `warden serve` over
// stdio and ends when its tools/list answers with the five tools, every
// module loaded (list_wait is long enough for that); rss-MB is the
// server's VmRSS at that moment. cold runs without a compile cache
// (cache_dir: off), so every module is compiled; warm with a cache filled
// before timing.
//
//	go test ./e2e -run '^$' -bench LSPModules -benchtime 3x -count 3 | tee lsp.txt
//	benchstat -col /modules lsp.txt
func BenchmarkLSPModules(b *testing.B) {
	dir := b.TempDir()
	warden := buildWarden(b, dir)
	project := filepath.Join(dir, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		b.Fatal(err)
	}
	layouts := map[string]map[string]string{ // layout -> module name -> package dir
		"five": {},
		"one":  {"lsp": filepath.Join("..", "tools-wasm", "lsp")},
	}
	for _, name := range lspTools {
		layouts["five"][name] = filepath.Join("testdata", "lsp-single", name)
	}
	configs := map[string]string{} // "cache/layout" -> config file
	for _, layout := range []string{"five", "one"} {
		tools := filepath.Join(dir, layout)
		if err := os.MkdirAll(tools, 0o755); err != nil {
			b.Fatal(err)
		}
		for module, pkg := range layouts[layout] {
			wasm, err := os.ReadFile(testwasm.BuildGoFile(b, pkg))
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tools, module+".wasm"), wasm, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		for _, cache := range []string{"cold", "warm"} {
			cacheDir := "off"
			if cache == "warm" {
				cacheDir = filepath.Join(dir, "cache-"+layout)
			}
			config := filepath.Join(dir, layout+"-"+cache+".yaml")
			yaml := fmt.Sprintf("project: {root: %s}\ntools:\n  dir: %s\n  cache_dir: %s\nserver: {list_wait: 10m}\nlog: {level: warn}\n", project, tools, cacheDir)
			if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
				b.Fatal(err)
			}
			configs[cache+"/"+layout] = config
		}
	}
	// Named key=value so that `benchstat -col /modules` puts the two
	// layouts side by side with their ratio.
	for _, cache := range []string{"cold", "warm"} {
		b.Run("cache="+cache, func(b *testing.B) {
			for _, layout := range []string{"five", "one"} {
				config := configs[cache+"/"+layout]
				b.Run(fmt.Sprintf("modules=%d", len(layouts[layout])), func(b *testing.B) {
					if cache == "warm" {
						serveUntilListed(b, warden, config) // fills the cache
					}
					var rss float64
					for b.Loop() {
						rss += serveUntilListed(b, warden, config)
					}
					b.ReportMetric(rss/float64(b.N), "rss-MB")
				})
			}
		})
	}
}

// serveUntilListed starts `warden serve` on config, initializes an MCP
// session over stdio and lists the tools, and returns the server's VmRSS
// in MB once the list holds every LSP tool. Stopping the server is not
// timed.
func serveUntilListed(b *testing.B, warden, config string) float64 {
	b.Helper()
	cmd := exec.Command(warden, "serve", "--config", config)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		b.StopTimer()
		stdin.Close()
		cmd.Wait()
		b.StartTimer()
	}()
	fmt.Fprint(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 16<<20)
	for lines.Scan() {
		var reply struct {
			ID     int `json:"id"`
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(lines.Bytes(), &reply) != nil || reply.ID != 2 {
			continue
		}
		listed := map[string]bool{}
		for _, t := range reply.Result.Tools {
			listed[t.Name] = true
		}
		for _, name := range lspTools {
			if !listed[name] {
				b.Fatalf("tools/list lacks %s: %s\nstderr: %s", name, lines.Bytes(), stderr.Bytes())
			}
		}
		return vmRSS(b, cmd.Process.Pid)
	}
	b.Fatalf("no tools/list answer: %v\nstderr: %s", lines.Err(), stderr.Bytes())
	return 0
}

// vmRSS reads the resident set size of process pid, in MB.
func vmRSS(b *testing.B, pid int) float64 {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				b.Fatalf("VmRSS %q: %v", v, err)
			}
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmRSS in /proc status")
	return 0
}
