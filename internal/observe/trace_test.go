package observe

import (
	"strings"
	"testing"
)

// TestNewTracingShowsNoCredential: an endpoint refused for its scheme is
// shown without its user:password@ (download.ShowURL), which a collector's
// URL may carry.
func TestNewTracingShowsNoCredential(t *testing.T) {
	_, err := NewTracing(t.Context(), TracingOptions{Endpoint: "grpc://u:hunter2@collector:4317"})
	if err == nil || !strings.Contains(err.Error(), `server.tracing.endpoint "grpc://collector:4317"`) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("NewTracing: %v", err)
	}
}
