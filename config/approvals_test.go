package config

import (
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/limits"
)

// TestApprovals: the defaults, the backend following memory.backend unless
// set (from the environment too), and every refusal naming its key,
// never the URL's password.
func TestApprovals(t *testing.T) {
	c, err := Load(writeConfig(t, "{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ApprovalsVia() != ApprovalsAuto || c.ApprovalsBackend() != ApprovalsLocal || c.ApprovalsFallBackLocal() ||
		c.Approvals.MaxPending != limits.DefaultApprovalsMaxPending || c.Approvals.MaxPendingPerCaller != limits.DefaultApprovalsMaxPendingPerCaller {
		t.Fatalf("defaults: %+v, backend %q", c.Approvals, c.ApprovalsBackend())
	}
	t.Setenv("WARDEN_MEMORY_BACKEND", "postgres://warden:pw@db/mem")
	c, err = Load(writeConfig(t, "approvals: {via: Console, on_backend_error: local, max_pending: 3, max_pending_per_caller: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ApprovalsVia() != ApprovalsConsole || c.ApprovalsBackend() != "postgres://warden:pw@db/mem" || !c.ApprovalsFallBackLocal() || c.Approvals.MaxPending != 3 ||
		c.Approvals.MaxPendingPerCaller != 2 {
		t.Fatalf("set: %+v, backend %q", c.Approvals, c.ApprovalsBackend())
	}
	t.Setenv("WARDEN_APPROVALS_BACKEND", "local")
	if c, err = Load(writeConfig(t, "{}\n")); err != nil || c.ApprovalsBackend() != ApprovalsLocal {
		t.Fatalf("approvals.backend over memory.backend: %v %q", err, c.ApprovalsBackend())
	}
	t.Setenv("WARDEN_APPROVALS_BACKEND", "")
	for body, want := range map[string]string{
		"approvals: {via: browser}\n":                           `approvals.via: must be auto, console or elicitation, got "browser"`,
		"approvals: {on_backend_error: allow}\n":                `approvals.on_backend_error: must be refuse or local, got "allow"`,
		"approvals: {max_pending: 0}\n":                         `approvals.max_pending: must be between 1 and 10000, got 0`,
		"approvals: {max_pending_per_caller: 0}\n":              `approvals.max_pending_per_caller: must be between 1 and 10000, got 0`,
		"approvals: {backend: file}\n":                          `approvals.backend: must be "local" or a postgres:// URL`,
		"approvals: {backend: \"redis://:s3cret@cache\"}\n":     `approvals.backend: must be "local" or a postgres:// URL`,
		"approvals: {backend: \"postgres://u:a/s3cret@h/d\"}\n": `approvals.backend: the postgres:// URL has an @ outside`,
	} {
		_, err := Load(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v", body, err)
		}
	}
}
