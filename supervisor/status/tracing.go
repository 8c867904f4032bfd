package status

import "github.com/supervisor-dev/supervisor/internal/tracing"

// writeTracing writes the master's span counts (internal/tracing's
// Stats): nothing while tracing is off (s nil). The workers' counts are
// logged when each exits ("tracing: exporter stopped").
func writeTracing(p *promText, s *tracing.Stats) {
	if s == nil {
		return
	}
	name := "supervisor_trace_spans_total"
	p.family(name, "counter", "The master's spans by outcome: exported to tracing.endpoint, dropped (its export queue, tracing.queue_size, was full), failed (their export failed)")
	p.sample(name, float64(s.Exported), "process", "master", "outcome", "exported")
	p.sample(name, float64(s.Dropped), "process", "master", "outcome", "dropped")
	p.sample(name, float64(s.Failed), "process", "master", "outcome", "failed")
}
