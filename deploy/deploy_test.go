// Package deploy holds the container and Kubernetes files and their tests:
// the Kubernetes example parses and is wired as docs/deploy.md says, and the
// Dockerfile builds when a docker engine answers.
package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestKubernetesExample: every document parses, the Deployment probes
// /healthz?ready for readiness and /healthz for liveness, and every Secret key it references exists.
func TestKubernetesExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("k8s", "warden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]map[string]any{}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("k8s/warden.yaml: %v", err)
		}
		kinds[doc["kind"].(string)] = doc
	}
	for _, kind := range []string{"Secret", "Deployment", "Service"} {
		if kinds[kind] == nil {
			t.Fatalf("k8s/warden.yaml has no %s", kind)
		}
	}
	secret := kinds["Secret"]["stringData"].(map[string]any)
	container := dig(t, kinds["Deployment"], "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	// Readiness waits for the modules to load; liveness does not
	// (mcpserver's healthz).
	for probe, want := range map[string]string{"readinessProbe": "/healthz?ready", "livenessProbe": "/healthz"} {
		if path := dig(t, container, probe, "httpGet", "path"); path != want {
			t.Errorf("%s path = %v, want %s", probe, path, want)
		}
	}
	wantEnv := map[string]bool{"WARDEN_SERVER_TOKEN": true, "WARDEN_MEMORY_BACKEND": true, "WARDEN_SERVER_STATE_KEY": true}
	for _, e := range container["env"].([]any) {
		e := e.(map[string]any)
		key := dig(t, e, "valueFrom", "secretKeyRef", "key").(string)
		if _, ok := secret[key]; !ok {
			t.Errorf("env %s references Secret key %q, which the Secret lacks", e["name"], key)
		}
		delete(wantEnv, e["name"].(string))
	}
	if len(wantEnv) > 0 {
		t.Errorf("the Deployment does not set %v", wantEnv)
	}
}

func dig(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("no %q in %v", k, v)
		}
		v = m[k]
	}
	return v
}

// TestDockerBuild builds the image when a docker engine answers; otherwise
// it skips, saying so.
func TestDockerBuild(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker is not installed: the Dockerfile was not built")
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no docker engine answers (docker info: %v): the Dockerfile was not built\n%s", err, lastLine(out))
	}
	if testing.Short() {
		t.Skip("-short: the Dockerfile was not built")
	}
	cmd := exec.Command("docker", "build", "--tag", "warden:test", "--file", "Dockerfile", ".")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	out, err := exec.Command("docker", "run", "--rm", "warden:test", "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "warden") {
		t.Fatalf("docker run warden:test --version: %v\n%s", err, out)
	}
}

// lastLine is the last non-empty line of out, where docker says why.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
