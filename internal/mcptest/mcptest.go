// Package mcptest holds helpers for tests that drive warden with the go-sdk
// client, shared by the mcpserver tests and the end-to-end tests of
// `warden serve`.
package mcptest

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ListenAcknowledged returns a channel closed when client receives
// notifications/subscriptions/acknowledged: under 2026-07-28 the server
// sends it once the client's subscriptions/listen stream (which the client
// opens in the background) is registered, so from then on a list_changed
// reaches the client. Tests wait on it instead of sleeping. Call it before
// Connect.
func ListenAcknowledged(client *mcp.Client) <-chan struct{} {
	acked := make(chan struct{})
	var once sync.Once
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "notifications/subscriptions/acknowledged" {
				once.Do(func() { close(acked) })
			}
			return res, err
		}
	})
	return acked
}
