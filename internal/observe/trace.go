package observe

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/warden-run/warden/internal/download"
)

// TracingOptions configures OpenTelemetry tracing.
type TracingOptions struct {
	// Endpoint is the OTLP/HTTP collector URL, e.g. http://127.0.0.1:4318;
	// without a path, /v1/traces is used.
	Endpoint string
	// SampleRatio is the fraction of calls traced (0..1) when the caller
	// sent no sampled parent; a traceparent's decision is followed.
	SampleRatio float64
	// Batch sends spans in batches (the default in production); tests
	// set Sync to export each span as it ends.
	Sync bool
}

// Tracing exports one span per call, with a child per capability request,
// to an OTLP/HTTP collector.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// NewTracing starts an exporter for o. It does not connect until spans are
// sent; Shutdown flushes them.
func NewTracing(ctx context.Context, o TracingOptions) (*Tracing, error) {
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server.tracing.endpoint %q: want an http(s) URL such as http://127.0.0.1:4318", download.ShowURL(o.Endpoint))
	}
	if o.SampleRatio < 0 || o.SampleRatio > 1 {
		return nil, fmt.Errorf("server.tracing.sample_ratio %v: want a number from 0 to 1", o.SampleRatio)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, fmt.Errorf("server.tracing.endpoint: %w", err)
	}
	res := resource.NewSchemaless(semconv.ServiceName("warden"))
	span := sdktrace.WithBatcher(exp)
	if o.Sync {
		span = sdktrace.WithSyncer(exp)
	}
	tp := sdktrace.NewTracerProvider(span, sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))))
	return &Tracing{tp: tp, tracer: tp.Tracer("github.com/warden-run/warden"), prop: propagation.TraceContext{}}, nil
}

// Extract returns ctx carrying the W3C traceparent of header, if any,
// as the parent of the call's span.
func (t *Tracing) Extract(ctx context.Context, header http.Header) context.Context {
	return t.prop.Extract(ctx, propagation.HeaderCarrier(header))
}

// Shutdown exports the spans not sent yet and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

func (t *Tracing) startCall(ctx context.Context, s CallStart) (context.Context, trace.Span) {
	name := "warden.call " + clip(s.Tool, maxField)
	attrs := []attribute.KeyValue{attribute.String("warden.tool", clip(s.Tool, maxField)), attribute.String("warden.module", s.Module),
		attribute.String("warden.session", clip(s.Session, maxField))}
	if s.Method != "" {
		attrs = append(attrs, attribute.String("warden.method", s.Method))
	}
	if s.Target != "" {
		// A feature request: its span is named by its method, so that it is
		// not counted as a call of the tool it runs as.
		name = "warden." + s.Method + " " + clip(s.Tool, maxField)
		attrs = append(attrs, attribute.String("warden.target", clip(s.Target, maxPath)))
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	if !span.IsRecording() {
		return ctx, nil
	}
	return ctx, span
}

func endCall(span trace.Span, e CallEnd) {
	span.SetAttributes(attribute.String("warden.kind", e.Kind), attribute.Int64("warden.fuel", int64(e.Fuel)))
	if e.Kind != "ok" {
		span.SetStatus(codes.Error, e.Kind)
	}
	span.End()
}

func (t *Tracing) capability(ctx context.Context, parent trace.Span, u Use, end time.Time) {
	decision := "allow"
	if u.Denied {
		decision = "deny"
	}
	_, span := t.tracer.Start(trace.ContextWithSpan(ctx, parent), "warden."+u.Capability, trace.WithTimestamp(u.Start),
		trace.WithAttributes(attribute.String("warden.capability", u.Capability), attribute.String("warden.op", clip(u.Op, maxField)),
			attribute.String("warden.decision", decision)))
	span.End(trace.WithTimestamp(end))
}

func decisionAttrs(d Decision) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("warden.detail", clip(d.Detail, maxField)), attribute.String("warden.outcome", clip(d.Outcome, maxField))}
}
