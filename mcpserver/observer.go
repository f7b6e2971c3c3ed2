package mcpserver

import (
	"context"
	"log/slog"
	"math"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/tool"
)

// maxPending bounds the notifications one call may have waiting for a slow
// client. Past it, log lines are dropped (and counted); progress never piles
// up because a newer report replaces a waiting one.
const maxPending = 256

// observer turns one call's progress reports and log lines into MCP
// notifications. A guest calls it on its own goroutine, which must never wait
// on a slow client, so notifications are queued and sent by a goroutine of
// the observer's own, started on the first notification. finish waits for
// the queue to drain, so that every notification precedes the call's result.
type observer struct {
	ctx     context.Context
	log     *slog.Logger
	tool    string
	session *mcp.ServerSession
	token   any // the client's progressToken; nil when it sent none

	mu       sync.Mutex
	last     float64 // last accepted progress
	reported bool    // whether any progress was accepted
	pending  []notification
	dropped  int
	sending  bool
	finished bool
	wg       sync.WaitGroup
}

type notification struct {
	progress *mcp.ProgressNotificationParams // exactly one of these is set
	log      *mcp.LoggingMessageParams
}

// Progress implements tool.Observer. Reports that do not increase are
// dropped: MCP requires progress to increase with every notification.
func (o *observer) Progress(p tool.Progress) {
	if o.token == nil || math.IsNaN(p.Progress) || math.IsInf(p.Progress, 0) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.finished || (o.reported && p.Progress <= o.last) {
		return
	}
	o.last, o.reported = p.Progress, true
	n := notification{progress: &mcp.ProgressNotificationParams{
		ProgressToken: o.token,
		Progress:      p.Progress,
		Total:         p.Total,
		Message:       p.Message,
	}}
	if k := len(o.pending); k > 0 && o.pending[k-1].progress != nil {
		o.pending[k-1] = n // the client only needs the newest
		return
	}
	o.enqueueLocked(n)
}

// Log implements tool.Observer: the line goes to the server's log at once,
// and to the client as notifications/message when the client asked for that
// level (the go-sdk applies logging/setLevel or the request's _meta level).
func (o *observer) Log(level slog.Level, message string) {
	// The server's log usually is the operator's terminal: the line is
	// escaped there, whatever handler writes it (the client gets it as sent,
	// as JSON).
	o.log.Log(o.ctx, level, termsafe.Escape(message), "tool", o.tool, "source", "guest")
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.finished {
		return
	}
	o.enqueueLocked(notification{log: &mcp.LoggingMessageParams{
		Level:  mcpLevel(level),
		Logger: o.tool,
		Data:   message,
	}})
}

func (o *observer) enqueueLocked(n notification) {
	if len(o.pending) >= maxPending {
		o.dropped++
		return
	}
	o.pending = append(o.pending, n)
	if !o.sending {
		o.sending = true
		o.wg.Add(1)
		go o.send()
	}
}

// send drains the queue, then exits; enqueueLocked starts it again when
// needed. A client that went away makes every send fail fast, since the
// request's context is then done.
func (o *observer) send() {
	defer o.wg.Done()
	for {
		o.mu.Lock()
		if len(o.pending) == 0 {
			o.sending = false
			o.mu.Unlock()
			return
		}
		n := o.pending[0]
		o.pending[0] = notification{}
		o.pending = o.pending[1:]
		o.mu.Unlock()

		if o.ctx.Err() != nil {
			continue // nobody to tell; drain without sending
		}
		var err error
		if n.progress != nil {
			err = o.session.NotifyProgress(o.ctx, n.progress)
		} else {
			err = o.session.Log(o.ctx, n.log)
		}
		if err != nil && o.ctx.Err() == nil {
			o.log.Debug("notification not sent", "tool", o.tool, "error", err)
		}
	}
}

// finish stops accepting notifications and waits until the queued ones are
// sent. It is called once the call returned, before its result is sent.
func (o *observer) finish() {
	o.mu.Lock()
	o.finished = true
	dropped := o.dropped
	o.mu.Unlock()
	o.wg.Wait()
	if dropped > 0 {
		o.log.Warn("client too slow: log notifications dropped", "tool", o.tool, "dropped", dropped)
	}
}

// mcpLevel maps a slog level onto the nearest MCP (syslog) level at or below it.
func mcpLevel(l slog.Level) mcp.LoggingLevel {
	switch {
	case l >= mcp.LevelEmergency:
		return "emergency"
	case l >= mcp.LevelAlert:
		return "alert"
	case l >= mcp.LevelCritical:
		return "critical"
	case l >= mcp.LevelError:
		return "error"
	case l >= mcp.LevelWarning:
		return "warning"
	case l >= mcp.LevelNotice:
		return "notice"
	case l >= mcp.LevelInfo:
		return "info"
	}
	return "debug"
}
