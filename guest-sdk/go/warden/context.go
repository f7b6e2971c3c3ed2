package warden

import (
	"fmt"

	"github.com/warden-run/warden/tool"
)

// Level is the severity of a log line, as the warden.log import numbers it.
type Level int32

const (
	LevelDebug   Level = 0
	LevelInfo    Level = 1
	LevelWarning Level = 2
	LevelError   Level = 3
)

// String returns the level's name as MCP logging spells it.
func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarning:
		return "warning"
	case LevelError:
		return "error"
	}
	return fmt.Sprintf("level(%d)", int32(l))
}

// HostFuncs is how a Context reaches warden. Inside a wasm module it is the
// warden.* imports; tests of a tool on the host pass their own to NewContext.
type HostFuncs interface {
	// Log forwards one log line.
	Log(level Level, message string)
	// Progress forwards one progress report.
	Progress(p tool.Progress)
	// Capability sends a JSON request to warden.<name> and returns the raw
	// JSON reply: {"result": ...} or {"error": {"kind", "message"}}.
	Capability(name string, request []byte) []byte
}

// Context is what a call knows about itself and how it talks to the host.
// It is valid only for the duration of the Call it was passed to.
type Context struct {
	// CallID identifies the call in warden's logs and progress notifications.
	CallID string
	// Cursor is set when the host continues a paginated listing (see
	// tool.Descriptor.Paginates); the host has verified it came from this tool.
	Cursor string

	host         HostFuncs
	lastProgress float64
	reported     bool
}

// NewContext returns a Context for calling a Tool directly, as a unit test
// does. A nil host discards logs and progress and denies every capability.
func NewContext(callID, cursor string, host HostFuncs) *Context {
	if host == nil {
		host = nopHost{}
	}
	return &Context{CallID: callID, Cursor: cursor, host: host}
}

// Log sends a log line to warden's log, and warden forwards it to the MCP
// client when the client asked for log messages. That forwarding is MCP
// logging, which MCP 2026-07-28 deprecates (SEP-2577): write log lines
// for the operator, who reads warden's log (stderr) and its traces, and
// tell the client through Progress (a task's status message) and the
// result. Log itself is not deprecated.
func (c *Context) Log(level Level, message string) { c.host.Log(level, message) }

// Logf is Log with a format.
func (c *Context) Logf(level Level, format string, args ...any) {
	c.host.Log(level, fmt.Sprintf(format, args...))
}

// Progress reports that done units out of total are finished (total 0 when
// unknown). The ABI requires progress to increase, so a report whose done is
// not greater than the previous one is dropped rather than sent.
func (c *Context) Progress(done, total float64, message string) {
	if c.reported && done <= c.lastProgress {
		return
	}
	c.reported, c.lastProgress = true, done
	c.host.Progress(tool.Progress{Progress: done, Total: total, Message: message})
}

// nopHost is the HostFuncs of a Context that has no host.
type nopHost struct{}

func (nopHost) Log(Level, string)      {}
func (nopHost) Progress(tool.Progress) {}
func (nopHost) Capability(name string, _ []byte) []byte {
	return encodeReplyError(tool.Errorf(tool.KindDenied, "no host: capability %q is not available", name))
}
