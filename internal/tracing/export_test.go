package tracing

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
)

// TestTracerCollectorDownDropsAndCounts: with the collector down (a port
// nobody listens on), ending many spans never blocks, at most queue_size
// of them are held at any time, the rest are dropped and counted, and
// every span is accounted for (dropped, or failed in an export) once the
// tracer shuts down.
func TestTracerCollectorDownDropsAndCounts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close() // nobody listens there now
	const queue, spans = 16, 2000
	tr, err := Start(Config{Endpoint: down, QueueSize: queue, BatchSize: 4, ExportTimeout: 200 * time.Millisecond}, "test", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range spans {
		tr.Start(trace.SpanContext{}, "s", time.Time{}).End()
		if h := tr.gate.held.Load(); h > queue {
			t.Fatalf("%d spans held, more than queue_size %d", h, queue)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("ending %d spans with the collector down took %s: ending a span must not wait on the collector", spans, d)
	}
	if s := tr.Stats(); s.Dropped < spans-queue {
		t.Fatalf("dropped %d spans of %d with a queue of %d, want at least %d", s.Dropped, spans, queue, spans-queue)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = tr.Shutdown(ctx)
	if s := tr.Stats(); s.Exported != 0 || s.Dropped+s.Failed != spans {
		t.Fatalf("stats %+v: want nothing exported and dropped+failed = %d", s, spans)
	}
}

func TestNilTracerIsOff(t *testing.T) {
	var tr *Tracer
	if s := tr.Stats(); s != (Stats{}) {
		t.Fatal(s)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
