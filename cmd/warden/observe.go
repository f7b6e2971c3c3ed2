package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/mcpserver"
)

// observability is what serve turned on of the audit log, metrics and
// traces; close flushes them.
type observability struct {
	rec     observe.Recorder
	metrics *observe.Metrics
	tracing *observe.Tracing
	closers []func(context.Context) error
}

// startObservability opens what cfg turns on and hands the app its Recorder.
func startObservability(ctx context.Context, cfg *config.Config, a *app.App, logger *slog.Logger) (*observability, error) {
	o := &observability{}
	var audit *observe.Audit
	if cfg.Log.Audit != "" {
		var err error
		audit, err = observe.OpenAudit(observe.AuditOptions{Path: cfg.Log.Audit, MaxSize: int64(cfg.Log.AuditMaxSize), Keep: cfg.Log.AuditKeep, Logger: logger, Redact: a.Redact})
		if err != nil {
			return nil, err
		}
		o.closers = append(o.closers, func(context.Context) error { return audit.Close() })
	}
	if cfg.Server.Metrics || cfg.Server.MetricsAddr != "" {
		src := a.ObserveSources()
		if audit != nil {
			src.AuditDropped = audit.Dropped
		}
		o.metrics = observe.NewMetrics(src)
	}
	if cfg.Server.Tracing.Endpoint != "" {
		t, err := observe.NewTracing(ctx, observe.TracingOptions{Endpoint: cfg.Server.Tracing.Endpoint, SampleRatio: cfg.Server.Tracing.SampleRatio})
		if err != nil {
			o.close(ctx)
			return nil, err
		}
		o.tracing = t
		o.closers = append(o.closers, t.Shutdown)
	}
	o.rec = observe.New(observe.Options{Audit: audit, Metrics: o.metrics, Tracing: o.tracing, AuditArguments: cfg.Log.AuditArguments})
	a.SetRecorder(o.rec)
	if o.metrics != nil && cfg.Server.MetricsAddr != "" {
		ln, err := net.Listen("tcp", cfg.Server.MetricsAddr)
		if err != nil {
			o.close(ctx)
			return nil, fmt.Errorf("server.metrics_addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", o.metrics.Handler())
		// The same Host and Origin checks as every endpoint of --http: a
		// rebinding page must not read the tools' names and counts here.
		hs := &http.Server{Handler: mcpserver.GuardOrigin(mux, logger), ReadHeaderTimeout: 10 * time.Second}
		go hs.Serve(ln)
		logger.Info("serving metrics", "addr", ln.Addr().String())
		o.closers = append(o.closers, hs.Shutdown)
	}
	return o, nil
}

// apply sets the server options the observability needs.
func (o *observability) apply(opts *mcpserver.Options) {
	if o.rec != nil {
		opts.QueueWaited = o.rec.QueueWaited
	}
	if o.tracing != nil {
		opts.CallContext = o.tracing.Extract
	}
}

// close flushes the audit log and traces, last opened first.
func (o *observability) close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var errs []error
	for i := len(o.closers) - 1; i >= 0; i-- {
		errs = append(errs, o.closers[i](ctx))
	}
	o.closers = nil
	return errors.Join(errs...)
}
