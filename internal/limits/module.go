package limits

import (
	"fmt"
	"time"
)

// Module is one module's limits as plain data: what config.yaml says
// (tools.defaults, then tools.limits.<module>) before the runtime takes it
// as a runtime.Limits. A zero field means its default.
type Module struct {
	Timeout       time.Duration
	Memory        uint64
	MaxOutput     int
	Fuel          int64
	LoadBudget    time.Duration
	Isolation     string
	MaxInstances  int
	CaptureBytes  int
	LogBytes      int
	LogLines      int
	CompileBudget time.Duration
}

// maxMemory is the most linear memory wasm32 can address.
const maxMemory = 4 << 30

// Validate reports the first out-of-range field, naming it by its config
// key. It is the one rule: config checks tools.defaults and tools.limits
// with it, and runtime.Limits.Validate is it.
func (l Module) Validate() error {
	switch {
	case l.Timeout < 0:
		return fmt.Errorf("timeout: must not be negative, got %s", l.Timeout)
	case l.Memory > maxMemory:
		return fmt.Errorf("memory: at most 4GiB, got %d bytes", l.Memory)
	case l.Memory != 0 && l.Memory < 64<<10:
		return fmt.Errorf("memory: at least one 64KiB page, got %d bytes", l.Memory)
	case l.MaxOutput < 0:
		return fmt.Errorf("max_output: must not be negative, got %d", l.MaxOutput)
	case l.Fuel < 0:
		return fmt.Errorf("fuel: must not be negative, got %d", l.Fuel)
	case l.LoadBudget < 0:
		return fmt.Errorf("load_budget: must not be negative, got %s", l.LoadBudget)
	case l.MaxInstances < 0:
		return fmt.Errorf("max_instances: must not be negative, got %d", l.MaxInstances)
	case l.CaptureBytes < 0:
		return fmt.Errorf("capture_bytes: must not be negative, got %d", l.CaptureBytes)
	case l.LogBytes < 0:
		return fmt.Errorf("log_bytes: must not be negative, got %d", l.LogBytes)
	case l.LogLines < 0:
		return fmt.Errorf("log_lines: must not be negative, got %d", l.LogLines)
	case l.CompileBudget < 0:
		return fmt.Errorf("compile_budget: must not be negative, got %s", l.CompileBudget)
	}
	switch l.Isolation {
	case "", IsolationCall, IsolationSession, IsolationShared:
	default:
		return fmt.Errorf("isolation: must be call, session or shared, got %q", l.Isolation)
	}
	return nil
}
