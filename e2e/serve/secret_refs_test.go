package serve

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

// secretRefsWorld serves hostcalls (bound to the secrets), shouty (tool
// READER, bound to none) and surface (which logs, prints and fails with
// what it is given), with secrets: entries read from a file, a variable and
// a file that does not exist, an audit log with arguments and debug logs.
type secretRefsWorld struct {
	*env
	file, audit string
	// line is config.yaml's line of secrets.deploy_key.tools, and gone the
	// line of secrets.gone_key.
	line, gone int
}

const (
	fileValueV1 = "file-v1-Zq8sT3cretRot4te"
	fileValueV2 = "file-v2-Wp5sT3cretRot4te"
	hostValue   = "host-Hx7sT3cretV4riable"
)

func newSecretRefsWorld(t *testing.T, extra ...string) *secretRefsWorld {
	t.Helper()
	w := &secretRefsWorld{env: newEnv(t, "", "hostcalls", "shouty", "surface")}
	w.file = filepath.Join(w.dir, "run-secrets", "deploy_key")
	w.audit = filepath.Join(w.dir, "audit.log")
	if err := os.MkdirAll(filepath.Dir(w.file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.file, []byte(fileValueV1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.setLogLevel(t, "debug")
	w.withConfig(t, fmt.Sprintf("  audit: %s\n  audit_arguments: true\nsecrets:\n"+
		"  DEPLOY_KEY:\n    file: run-secrets/deploy_key\n    tools: [hostcalls]\n"+
		"  HOST_KEY: {env: E2E_SECRET_REF_HOST, tools: [hostcalls]}\n"+
		"  GONE_KEY: {file: /nonexistent/warden-e2e/gone, tools: [hostcalls]}\n", w.audit)+strings.Join(extra, ""))
	b, err := os.ReadFile(w.config)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case l == "    tools: [hostcalls]":
			w.line = i + 1
		case strings.HasPrefix(l, "  GONE_KEY:"):
			w.gone = i + 1
		}
	}
	if w.line == 0 || w.gone == 0 {
		t.Fatalf("no secrets lines in:\n%s", b)
	}
	return w
}

// TestSecretReferences runs the real warden serve with secrets read from
// a file and a host variable:
//   - the bound tool (hostcalls) reads each value;
//   - the file rewritten between two calls is what the second call reads;
//   - another tool (READER) gets the exact refusal naming the secret and
//     the config line that would allow it;
//   - a secret whose file does not exist is an error naming the secret,
//     its source and its config line;
//   - a tool that logs, prints and fails with the values (surface) gets
//     none of them into warden's stderr log (debug level) or audit log,
//     the rotated value included, which no config held at the last reload;
//   - and no byte of either, of /metrics, of the trace spans sent to an
//     OTLP collector, nor of any refusal, holds a value.
func TestSecretReferences(t *testing.T) {
	traces := collector(t)
	metricsAddr := freeAddr(t)
	w := newSecretRefsWorld(t, fmt.Sprintf("server:\n  metrics_addr: %s\n  tracing: {endpoint: %s, sample_ratio: 1}\n", metricsAddr, traces.url))
	t.Setenv("E2E_SECRET_REF_HOST", hostValue)
	cs, stderr := stdioServer(t, w.env, "", nil)

	get := func(key string) string {
		t.Helper()
		return dump(call(t, cs, "hostcalls", map[string]any{"env": map[string]any{"op": "get", "key": key}}))
	}
	if got := get("DEPLOY_KEY"); !strings.Contains(got, fileValueV1) {
		t.Fatalf("the bound tool does not read the file's value: %s", got)
	}
	if got := get("host_key"); !strings.Contains(got, hostValue) {
		t.Fatalf("the bound tool does not read the variable's value: %s", got)
	}
	// Rotation: the file is replaced between two calls, as kubelet does.
	tmp := w.file + ".new"
	if err := os.WriteFile(tmp, []byte(fileValueV2+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, w.file); err != nil {
		t.Fatal(err)
	}
	if got := get("DEPLOY_KEY"); !strings.Contains(got, fileValueV2) || strings.Contains(got, fileValueV1) {
		t.Fatalf("after rotation the bound tool reads: %s", got)
	}
	var errorsShown []string
	refusal := dump(call(t, cs, "READER", map[string]any{"key": "DEPLOY_KEY"}))
	errorsShown = append(errorsShown, refusal)
	want := fmt.Sprintf(`env: secret \"DEPLOY_KEY\" is not bound to tool \"READER\" (config key secrets.deploy_key.tools, %s:%d: add reader there to allow it)`, w.config, w.line)
	if !strings.Contains(refusal, want) || !strings.Contains(refusal, `"kind":"denied"`) {
		t.Fatalf("another tool's read:\n%s\nwant %s", refusal, want)
	}
	gone := get("GONE_KEY")
	errorsShown = append(errorsShown, gone)
	want = fmt.Sprintf(`env: secret \"GONE_KEY\" (file /nonexistent/warden-e2e/gone, config key secrets.gone_key, %s:%d) cannot be read: /nonexistent/warden-e2e/gone does not exist: not found`, w.config, w.gone)
	if !strings.Contains(gone, want) || !strings.Contains(gone, `"kind":"not_found"`) {
		t.Fatalf("a missing secret file:\n%s\nwant %s", gone, want)
	}
	for _, v := range []string{fileValueV1, fileValueV2, hostValue} {
		res := call(t, cs, "surface", map[string]any{"log": "log " + v, "print": "print " + v})
		if res.IsError {
			t.Fatalf("log and print: %s", dump(res))
		}
		call(t, cs, "surface", map[string]any{"error": map[string]any{"kind": "failed", "message": "error " + v}})
	}
	status, metrics := getMetrics(t, "http://"+metricsAddr+"/metrics", "")
	if status != 200 || !strings.Contains(metrics, `tool="hostcalls"`) {
		t.Fatalf("GET /metrics: %d\n%s", status, metrics)
	}
	if err := cs.Close(); err != nil { // flushes the audit log and the spans
		t.Fatalf("warden serve did not exit cleanly: %v", err)
	}
	audit, err := os.ReadFile(w.audit)
	if err != nil {
		t.Fatal(err)
	}
	if len(traces.calls()) == 0 {
		t.Fatal("the collector received no call span")
	}
	var spans strings.Builder
	traces.mu.Lock()
	for _, span := range traces.spans {
		b, _ := proto.Marshal(span)
		spans.Write(b)
	}
	traces.mu.Unlock()
	sinks := map[string]string{"audit log": string(audit), "stderr log": stderr.String(), "metrics": metrics, "trace spans": spans.String()}
	for i, e := range errorsShown {
		sinks[fmt.Sprintf("error result %d", i)] = e
	}
	for sink, text := range sinks {
		for _, v := range []string{fileValueV1, fileValueV2, hostValue} {
			if strings.Contains(text, v) {
				t.Errorf("%s holds the secret %s:\n%s", sink, v, text)
			}
		}
	}
	if !strings.Contains(stderr.String(), "[redacted]") || !strings.Contains(string(audit), "[redacted]") {
		t.Errorf("no [redacted] where the values were:\nstderr:\n%s\naudit:\n%s", stderr.String(), audit)
	}
}

// TestSecretNeverWrittenToConfig: warden's commands that rewrite
// config.yaml (grant, revoke) keep the secrets: section as references,
// byte for byte, and no value read from a source ends up in the file.
func TestSecretNeverWrittenToConfig(t *testing.T) {
	w := newSecretRefsWorld(t)
	for _, args := range [][]string{
		{"grant", "hostcalls", "env=DEPLOY_KEY", "net=api.example.com"},
		{"grant", "READER", "env=HOST_KEY", "--module", "shouty"},
		{"revoke", "hostcalls", "net=api.example.com"},
	} {
		cmd := exec.Command(built.warden, append(args, "--config", w.config)...)
		cmd.Env = childEnv("E2E_SECRET_REF_HOST=" + hostValue)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("warden %v: %v\n%s", args, err, stderr.String())
		}
		b, err := os.ReadFile(w.config)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{fileValueV1, hostValue} {
			for where, text := range map[string]string{"config.yaml": string(b), "stdout": stdout.String(), "stderr": stderr.String()} {
				if strings.Contains(text, v) {
					t.Fatalf("after warden %v, %s holds a secret value:\n%s", args, where, text)
				}
			}
		}
		if !strings.Contains(string(b), "secrets:\n  DEPLOY_KEY:\n    file: run-secrets/deploy_key\n    tools: [hostcalls]\n  HOST_KEY: {env: E2E_SECRET_REF_HOST, tools: [hostcalls]}\n") {
			t.Fatalf("after warden %v the secrets section changed:\n%s", args, b)
		}
	}
}

// TestSecretList: warden secret list shows each secret's name, source,
// tools and whether it can be read, never a value.
func TestSecretList(t *testing.T) {
	w := newSecretRefsWorld(t)
	cmd := exec.Command(built.warden, "secret", "list", "--config", w.config)
	cmd.Env = childEnv("E2E_SECRET_REF_HOST=" + hostValue)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("warden secret list: %v\n%s", err, out)
	}
	for _, line := range []string{
		"NAME ",
		"DEPLOY_KEY  file " + w.file,
		"GONE_KEY    file /nonexistent/warden-e2e/gone",
		"unreadable: /nonexistent/warden-e2e/gone does not exist: not found",
		"HOST_KEY    env E2E_SECRET_REF_HOST",
	} {
		if !strings.Contains(string(out), line) {
			t.Errorf("warden secret list does not show %q:\n%s", line, out)
		}
	}
	for _, v := range []string{fileValueV1, hostValue} {
		if strings.Contains(string(out), v) {
			t.Fatalf("warden secret list shows a value:\n%s", out)
		}
	}
}

// TestSecretSetRefusals: warden secret set refuses, before touching any
// keyring, a name that is no keyring entry name (a usage error) and an
// empty stdin, saying how to give the value.
func TestSecretSetRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, stdin, want string
		code              int
	}{
		{"a b", "value", `"a b" is not a keyring entry name (1-128 characters of A-Z a-z 0-9 _ - ., starting with a letter or digit)`, 2},
		{"ok-name", "\n", `nothing stored: stdin held no value (pipe it in: printf %s "$VALUE" | warden secret set ok-name)`, 1},
	} {
		cmd := exec.Command(built.warden, "secret", "set", c.name)
		cmd.Env = childEnv()
		cmd.Stdin = strings.NewReader(c.stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("warden secret set %q: exit %d, stderr:\n%s\nwant exit %d and %q", c.name, code, stderr.String(), c.code, c.want)
		}
	}
}

// TestSecretRebindOnReload: a config change binding the secret to READER
// as well (with READER's grant entry bound to module shouty, which serves
// it), and pointing it at another file, applies from the next call on,
// without a restart.
func TestSecretRebindOnReload(t *testing.T) {
	t.Parallel()
	w := newSecretRefsWorld(t)
	cs, stderr := stdioServer(t, w.env, "", nil)
	if got := dump(call(t, cs, "READER", map[string]any{"key": "DEPLOY_KEY"})); !strings.Contains(got, `"kind":"denied"`) {
		t.Fatalf("READER before the reload: %s", got)
	}
	other := filepath.Join(w.dir, "run-secrets", "other_key")
	if err := os.WriteFile(other, []byte(fileValueV2), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(w.config)
	if err != nil {
		t.Fatal(err)
	}
	rebound := strings.Replace(string(b), "    file: run-secrets/deploy_key\n    tools: [hostcalls]\n", "    file: run-secrets/other_key\n    tools: [hostcalls, reader]\n", 1)
	// READER is served by module shouty: its grant entry binds it there,
	// else the secret would go to a module named reader only.
	rebound = strings.Replace(rebound, "    shouty: {}\n", "    shouty: {}\n    reader: {module: shouty}\n", 1)
	if !strings.Contains(rebound, "tools: [hostcalls, reader]") || !strings.Contains(rebound, "reader: {module: shouty}") {
		t.Fatalf("no DEPLOY_KEY entry or shouty grant in:\n%s", b)
	}
	reloads := strings.Count(stderr.String(), "config reloaded")
	if err := os.WriteFile(w.config, []byte(rebound), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the config reload", func() bool { return strings.Count(stderr.String(), "config reloaded") > reloads })
	if got := dump(call(t, cs, "READER", map[string]any{"key": "DEPLOY_KEY"})); !strings.Contains(got, fileValueV2) {
		t.Fatalf("READER after the reload: %s", got)
	}
	if strings.Contains(stderr.String(), fileValueV2) {
		t.Fatalf("the stderr log holds the value:\n%s", stderr.String())
	}
}
