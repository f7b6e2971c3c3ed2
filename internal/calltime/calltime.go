// Package calltime carries how long a call waited for a slot in the MCP
// layer through its context, so that the runtime's deadline for the call
// counts that wait: a tool's timeout bounds the call as its client sees it,
// not only the part after the queue. Only the queue's wait is carried, not
// the arrival time: what else happens between (a confirmation gate waiting
// for a person, compiling a lazily loaded module) is not the queue's and
// has bounds of its own.
package calltime

import (
	"context"
	"time"
)

type key struct{}

// WithQueueWait returns ctx carrying how long the call waited for a slot.
func WithQueueWait(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, key{}, d)
}

// QueueWait returns how long the call ctx belongs to waited for a slot (0
// when ctx does not say).
func QueueWait(ctx context.Context) time.Duration {
	d, _ := ctx.Value(key{}).(time.Duration)
	return d
}
