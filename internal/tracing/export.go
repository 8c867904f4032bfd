package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Config is where and how a process exports its spans: the config's
// tracing section as every process receives it (worker.Spec carries it
// to the workers).
type Config struct {
	// Endpoint is the OTLP/gRPC collector, host:port.
	Endpoint string `json:"endpoint"`
	// TLS dials the collector over TLS with the host's roots; false
	// dials plain text (a collector on the host or its private network).
	TLS bool `json:"tls,omitempty"`
	// QueueSize bounds the spans a process holds for export; over it a
	// span is dropped and counted.
	QueueSize int `json:"queue_size"`
	// BatchSize is the most spans one export sends.
	BatchSize int `json:"batch_size"`
	// ExportTimeout bounds one export, its retries included.
	ExportTimeout time.Duration `json:"export_timeout"`
}

// ServiceName is the OpenTelemetry service.name of every span.
const ServiceName = "supervisor"

// Tracer makes and exports one process's spans. A nil *Tracer is tracing
// off: its methods do nothing and cost a nil check.
type Tracer struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	gate   *gate
	log    zerolog.Logger
}

// Stats are a Tracer's span counts since it started.
type Stats struct {
	// Exported spans reached the collector.
	Exported uint64
	// Dropped spans found the queue full (a slow or down collector).
	Dropped uint64
	// Failed spans were in an export that failed (collector down,
	// refused, or past export_timeout).
	Failed uint64
}

// Start starts process's exporter to cfg.Endpoint. It does not wait for
// the collector: one that is down or slow costs spans (dropped and
// counted), never a request's time or unbounded memory.
func Start(cfg Config, process string, log zerolog.Logger) (*Tracer, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("tracing: no endpoint")
	}
	opts := []otlptracegrpc.Option{
		otlptracegrpc.WithEndpoint(cfg.Endpoint),
		otlptracegrpc.WithTimeout(cfg.ExportTimeout),
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true,
			InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: cfg.ExportTimeout}),
	}
	if !cfg.TLS {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	exp, err := otlptracegrpc.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter to %s: %w", cfg.Endpoint, err)
	}
	t := &Tracer{log: log}
	t.gate = &gate{max: int64(cfg.QueueSize), log: log}
	counted := &countingExporter{SpanExporter: exp, gate: t.gate}
	// The batch processor's own queue is as large as the gate lets
	// through, so it never drops what the gate does not count.
	bsp := sdktrace.NewBatchSpanProcessor(counted,
		sdktrace.WithMaxQueueSize(cfg.QueueSize),
		sdktrace.WithMaxExportBatchSize(min(cfg.BatchSize, cfg.QueueSize)),
		sdktrace.WithExportTimeout(cfg.ExportTimeout))
	t.gate.SpanProcessor = bsp
	host, _ := os.Hostname() // a fleet's hosts apart in one collector
	res := resource.NewSchemaless(attribute.String("service.name", ServiceName), attribute.String("host.name", host),
		attribute.String("supervisor.process", process))
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithSpanProcessor(t.gate), sdktrace.WithResource(res))
	t.tracer = t.tp.Tracer("github.com/supervisor-dev/supervisor")
	setErrorHandler(log)
	return t, nil
}

// Shutdown exports what is queued, within ctx, and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	err := t.tp.Shutdown(ctx)
	s := t.Stats()
	t.log.Info().Uint64("spans_exported", s.Exported).Uint64("spans_dropped", s.Dropped).Uint64("spans_failed", s.Failed).
		Msg("tracing: exporter stopped")
	return err
}

// Stats are t's span counts; zero for a nil t.
func (t *Tracer) Stats() Stats {
	if t == nil {
		return Stats{}
	}
	return Stats{Exported: t.gate.exported.Load(), Dropped: t.gate.dropped.Load(), Failed: t.gate.failed.Load()}
}

// Start starts span name as a child of parent (a remote span context:
// the client's, or the process before this one), at start (zero: now).
func (t *Tracer) Start(parent trace.SpanContext, name string, start time.Time, attrs ...attribute.KeyValue) trace.Span {
	ctx := context.Background()
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(attrs...)}
	if !start.IsZero() {
		opts = append(opts, trace.WithTimestamp(start))
	}
	_, s := t.tracer.Start(ctx, name, opts...)
	return s
}

// Interval records a span that already happened: name, child of parent,
// from start to end.
func (t *Tracer) Interval(parent trace.SpanContext, name string, start, end time.Time, attrs ...attribute.KeyValue) trace.SpanContext {
	s := t.Start(parent, name, start, attrs...)
	s.End(trace.WithTimestamp(end))
	return s.SpanContext()
}

// gate bounds the spans between their end and their export: over max, a
// span is dropped and counted instead of queued. The batch processor
// behind it holds at most max, queued or being exported, so a collector
// that is down costs at most max spans of memory and never blocks a span's
// end (the processor's own queue never fills: it is max long).
type gate struct {
	sdktrace.SpanProcessor
	max                       int64
	held                      atomic.Int64
	exported, dropped, failed atomic.Uint64
	log                       zerolog.Logger
}

func (g *gate) OnEnd(s sdktrace.ReadOnlySpan) {
	if g.held.Add(1) > g.max {
		g.held.Add(-1)
		if g.dropped.Add(1) == 1 {
			g.log.Warn().Int64("queue_size", g.max).
				Msg("tracing: a span was dropped: the export queue is full (is the collector down or slow?); drops are counted, and logged with the totals when the process stops")
		}
		return
	}
	g.SpanProcessor.OnEnd(s)
}

// countingExporter releases the gate's hold on each span it was given,
// exported or not, and counts which.
type countingExporter struct {
	sdktrace.SpanExporter
	gate *gate
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	n := uint64(len(spans))
	if err != nil {
		e.gate.failed.Add(n)
	} else {
		e.gate.exported.Add(n)
	}
	e.gate.held.Add(-int64(n))
	return err
}

var errorHandlerOnce sync.Once

// setErrorHandler sends OpenTelemetry's errors (failed exports) to log,
// at most one a minute: a collector that is down fails every export.
func setErrorHandler(log zerolog.Logger) {
	errorHandlerOnce.Do(func() {
		var mu sync.Mutex
		var last time.Time
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if time.Since(last) < time.Minute {
				return
			}
			last = time.Now()
			log.Warn().Err(err).Msg("tracing: span export failed (further failures this minute are counted, not logged)")
		}))
	})
}
