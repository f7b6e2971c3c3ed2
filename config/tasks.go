package config

import (
	"time"

	"github.com/warden-run/warden/internal/backendurl"
	"github.com/warden-run/warden/internal/limits"
)

// Tasks configures task execution (MCP tasks): where task records live and
// what bounds them. Read at start.
type Tasks struct {
	// Backend is "file" (the project's .warden/tasks) or a postgres://
	// URL; empty means memory.backend's, so that replicas sharing their
	// memories share their tasks too.
	Backend string `mapstructure:"backend"`
	// MaxPerClient bounds the unfinished tasks of one client (one owner:
	// OAuth subject, token holder or local peer); MaxTotal, the server's.
	MaxPerClient int `mapstructure:"max_per_client"`
	MaxTotal     int `mapstructure:"max_total"`
	// MaxRecordsPerClient bounds the records, finished or not, one client
	// keeps (each until its TTL, a finished one with its result);
	// MaxRecords, the store's.
	MaxRecordsPerClient int `mapstructure:"max_records_per_client"`
	MaxRecords          int `mapstructure:"max_records"`
	// MaxResult bounds one stored result (a CallToolResult's JSON); 0
	// means the largest max_output of tools.defaults and tools.limits.
	MaxResult ByteSize `mapstructure:"max_result"`
	// TTL is how long a task's record is kept when the client asks for no
	// TTL; MaxTTL is the most a client may ask for.
	TTL    time.Duration `mapstructure:"ttl"`
	MaxTTL time.Duration `mapstructure:"max_ttl"`
	// PollInterval is the interval between tasks/get the server suggests.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Lease is how long a replica's claim on a running task lasts without
	// renewal; the replica renews every Lease/3 (RenewInterval), and a task
	// whose replica stopped renewing ends failed once its lease lapses.
	Lease time.Duration `mapstructure:"lease"`
}

// TasksBackend is the backend of the task store: tasks.backend, else
// memory.backend.
func (c *Config) TasksBackend() string {
	if c.Tasks.Backend != "" {
		return c.Tasks.Backend
	}
	return c.Memory.Backend
}

// TaskResultBytes is the bound of one stored task result: tasks.max_result,
// else the largest max_output a tool has, so that a result the tool may
// return interactively is never refused only because it ran as a task
// (except for what its JSON encoding adds).
func (c *Config) TaskResultBytes() int {
	if c.Tasks.MaxResult != 0 {
		return int(c.Tasks.MaxResult)
	}
	n := c.Tools.Defaults.MaxOutput
	for _, l := range c.Tools.Limits {
		n = max(n, l.MaxOutput)
	}
	return int(n)
}

// RenewInterval is how often a replica renews its running tasks' leases: a
// third of the lease, so that two renewals may fail before it lapses.
func (t Tasks) RenewInterval() time.Duration { return t.Lease / 3 }

// The bounds of the task settings.
const (
	maxTaskCount = 1_000_000
	maxTaskTTL   = 30 * 24 * time.Hour
	minTaskLease = 3 * time.Second
	maxTaskLease = time.Hour
	minPoll      = 100 * time.Millisecond
	maxPoll      = time.Hour
	maxResult    = limits.MaxTaskResult
)

// validateTasks checks the tasks section; each error names its key.
func (c *Config) validateTasks(fail func(key, format string, args ...any)) {
	t := c.Tasks
	if err := backendurl.Check(t.Backend); err != nil {
		fail("tasks.backend", "%v", err) // never the value: it may hold a password
	}
	if t.MaxPerClient < 1 || t.MaxPerClient > maxTaskCount {
		fail("tasks.max_per_client", "must be between 1 and %d, got %d", maxTaskCount, t.MaxPerClient)
	}
	if t.MaxTotal < 1 || t.MaxTotal > maxTaskCount {
		fail("tasks.max_total", "must be between 1 and %d, got %d", maxTaskCount, t.MaxTotal)
	} else if t.MaxPerClient > t.MaxTotal {
		fail("tasks.max_per_client", "must not be more than tasks.max_total (%d), got %d", t.MaxTotal, t.MaxPerClient)
	}
	if t.MaxRecordsPerClient < 1 || t.MaxRecordsPerClient > maxTaskCount {
		fail("tasks.max_records_per_client", "must be between 1 and %d, got %d", maxTaskCount, t.MaxRecordsPerClient)
	} else if t.MaxRecordsPerClient < t.MaxPerClient {
		fail("tasks.max_records_per_client", "must not be less than tasks.max_per_client (%d): every unfinished task is a record, got %d", t.MaxPerClient, t.MaxRecordsPerClient)
	}
	if t.MaxRecords < 1 || t.MaxRecords > maxTaskCount {
		fail("tasks.max_records", "must be between 1 and %d, got %d", maxTaskCount, t.MaxRecords)
	} else if t.MaxRecords < t.MaxTotal {
		fail("tasks.max_records", "must not be less than tasks.max_total (%d): every unfinished task is a record, got %d", t.MaxTotal, t.MaxRecords)
	} else if t.MaxRecordsPerClient > t.MaxRecords {
		fail("tasks.max_records", "must not be less than tasks.max_records_per_client (%d), got %d", t.MaxRecordsPerClient, t.MaxRecords)
	}
	if t.MaxResult > maxResult {
		fail("tasks.max_result", "must be at most 1GiB (0 means the largest max_output), got %s", t.MaxResult)
	}
	if t.MaxTTL <= 0 || t.MaxTTL > maxTaskTTL {
		fail("tasks.max_ttl", "must be positive and at most 720h (30 days), got %s", t.MaxTTL)
	}
	if t.TTL <= 0 {
		fail("tasks.ttl", "must be positive, got %s", t.TTL)
	} else if t.MaxTTL > 0 && t.TTL > t.MaxTTL {
		fail("tasks.ttl", "must not be more than tasks.max_ttl (%s), got %s", t.MaxTTL, t.TTL)
	}
	if t.PollInterval < minPoll || t.PollInterval > maxPoll {
		fail("tasks.poll_interval", "must be between %s and %s, got %s", minPoll, maxPoll, t.PollInterval)
	}
	if t.Lease < minTaskLease || t.Lease > maxTaskLease {
		fail("tasks.lease", "must be between %s and %s, got %s", minTaskLease, maxTaskLease, t.Lease)
	} else if t.TTL > 0 && t.Lease > t.TTL {
		fail("tasks.lease", "must not be more than tasks.ttl (%s), got %s", t.TTL, t.Lease)
	}
}
