package config

import (
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/limits"
)

// TestTasksDefaults: without a tasks section the store is memory.backend's
// and the bounds are internal/limits'; a result may be as large as the
// largest max_output.
func TestTasksDefaults(t *testing.T) {
	c, err := Load(writeConfig(t, "tools:\n  limits:\n    big: {max_output: 8MiB}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Tasks{MaxPerClient: limits.DefaultTasksMaxPerClient, MaxTotal: limits.DefaultTasksMaxTotal,
		MaxRecordsPerClient: limits.DefaultTasksMaxRecordsPerClient, MaxRecords: limits.DefaultTasksMaxRecords,
		TTL: limits.DefaultTaskTTL, MaxTTL: limits.DefaultTaskMaxTTL, PollInterval: limits.DefaultTaskPollInterval, Lease: limits.DefaultTaskLease}
	if c.Tasks != want {
		t.Errorf("tasks = %+v, want %+v", c.Tasks, want)
	}
	if got := c.TasksBackend(); got != "file" {
		t.Errorf("TasksBackend = %q, want file", got)
	}
	if got := c.TaskResultBytes(); got != 8<<20 {
		t.Errorf("TaskResultBytes = %d, want the largest max_output, 8MiB", got)
	}
	if got := c.Tasks.RenewInterval(); got != limits.DefaultTaskLease/3 {
		t.Errorf("RenewInterval = %v", got)
	}
}

// TestTasksBackendFollowsMemory: replicas that share memories share tasks
// unless tasks.backend says otherwise; the environment sets either.
func TestTasksBackendFollowsMemory(t *testing.T) {
	const url = "postgres://u:pw@db.internal/warden"
	t.Setenv("WARDEN_MEMORY_BACKEND", url)
	c, err := Load(writeConfig(t, "tasks: {max_result: 2MiB, ttl: 2h}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.TasksBackend() != url || c.TaskResultBytes() != 2<<20 || c.Tasks.TTL != 2*time.Hour {
		t.Errorf("backend %q, result bytes %d, ttl %v", c.TasksBackend(), c.TaskResultBytes(), c.Tasks.TTL)
	}
	t.Setenv("WARDEN_TASKS_BACKEND", "file")
	if c, err = Load(writeConfig(t, "")); err != nil || c.TasksBackend() != "file" {
		t.Errorf("WARDEN_TASKS_BACKEND=file: %v, %v", c, err)
	}
}

// TestTasksValidation: each bad tasks setting is refused where it is
// written, naming its key, and a backend URL's password is never shown.
func TestTasksValidation(t *testing.T) {
	cases := []struct{ body, want string }{
		{"tasks: {backend: 'mysql://x'}", `config.yaml:1: tasks.backend: must be "file" or a postgres:// URL`},
		{"tasks: {backend: 'postgres://u:se/cret@h/db'}", "config.yaml:1: tasks.backend: the postgres:// URL has an @ outside its user:password@ part"},
		{"tasks: {max_per_client: 0}", "config.yaml:1: tasks.max_per_client: must be between 1 and 1000000, got 0"},
		{"tasks: {max_total: -1}", "config.yaml:1: tasks.max_total: must be between 1 and 1000000, got -1"},
		{"tasks: {max_per_client: 20, max_total: 10}", "config.yaml:1: tasks.max_per_client: must not be more than tasks.max_total (10), got 20"},
		{"tasks: {max_records_per_client: 0}", "config.yaml:1: tasks.max_records_per_client: must be between 1 and 1000000, got 0"},
		{"tasks: {max_records_per_client: 8}", "config.yaml:1: tasks.max_records_per_client: must not be less than tasks.max_per_client (16): every unfinished task is a record, got 8"},
		{"tasks: {max_records: 100}", "config.yaml:1: tasks.max_records: must not be less than tasks.max_total (256): every unfinished task is a record, got 100"},
		{"tasks: {max_records: 500}", "config.yaml:1: tasks.max_records: must not be less than tasks.max_records_per_client (1000), got 500"},
		{"tasks: {max_result: 2GiB}", "config.yaml:1: tasks.max_result: must be at most 1GiB (0 means the largest max_output), got 2.0 GiB"},
		{"tasks: {ttl: 0s}", "config.yaml:1: tasks.ttl: must be positive, got 0s"},
		{"tasks: {ttl: 48h}", "config.yaml:1: tasks.ttl: must not be more than tasks.max_ttl (24h0m0s), got 48h0m0s"},
		{"tasks: {max_ttl: 1000h}", "config.yaml:1: tasks.max_ttl: must be positive and at most 720h (30 days), got 1000h0m0s"},
		{"tasks: {poll_interval: 1ms}", "config.yaml:1: tasks.poll_interval: must be between 100ms and 1h0m0s, got 1ms"},
		{"tasks: {lease: 1s}", "config.yaml:1: tasks.lease: must be between 3s and 1h0m0s, got 1s"},
		{"tasks: {lease: 50m, ttl: 10m}", "config.yaml:1: tasks.lease: must not be more than tasks.ttl (10m0s), got 50m0s"},
		{"tasks: {ttl: soon}", `config.yaml:1: tasks.ttl: want a duration like "30s", got "soon"`},
		{"tasks: {lifetime: 1h}", `config.yaml:1: unknown key "lifetime" under "tasks"`},
	}
	for _, c := range cases {
		_, err := Load(writeConfig(t, c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", c.body, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "cret") {
			t.Errorf("%s: the error shows the password: %v", c.body, err)
		}
	}
	t.Setenv("WARDEN_TASKS_LEASE", "1s")
	if _, err := Load(writeConfig(t, "")); err == nil || !strings.Contains(err.Error(), "WARDEN_TASKS_LEASE") || !strings.Contains(err.Error(), "tasks.lease: must be between 3s and 1h0m0s, got 1s") {
		t.Errorf("WARDEN_TASKS_LEASE=1s: %v", err)
	}
}
