package tool

import "log/slog"

// Progress is one progress report from a running call. Progress increases
// from report to report; Total is 0 when unknown.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// Observer receives what a call reports while it runs. The MCP server turns
// these into notifications; the CLI prints them to stderr. Implementations
// must be safe for concurrent use and must not block for long: they are
// called on the guest's own goroutine.
type Observer interface {
	Progress(p Progress)
	Log(level slog.Level, message string)
}
