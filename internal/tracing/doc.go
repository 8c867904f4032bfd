// Package tracing is supervisor's side of Triton's trace extension over
// OpenTelemetry: which requests are traced (Sampler, the trace settings
// that GET and POST /v2/trace/setting and /v2/models/{m}/trace/setting,
// and gRPC TraceSetting, read and change), how a span's context travels
// (the W3C traceparent header: Parse, Append) and how each process
// exports its spans over OTLP/gRPC (Tracer).
//
// Contract: the master decides. For each inference request it asks
// Sampler.Sample (trace_level, one in trace_rate, at most trace_count,
// global or the model's override); a sampled request gets the master's
// spans, and the master sends the prep worker a traceparent whose
// sampled flag is set, as a child of the client's traceparent when the
// client sent a valid one (its trace id and parent span). A request that
// is not sampled is sent with no traceparent at all, whatever the client
// sent. The prep and infer workers trace exactly the requests whose
// traceparent is sampled, and pass their own span on to the next process
// the same way. So the settings live in the master only, change at run
// time without reaching the workers, and a client cannot make a worker
// trace by sending a sampled traceparent of its own.
//
// Invariants:
//
//   - Tracing off (no tracing.endpoint) means no Tracer in any process and
//     no Sampler in the master: the request path pays a nil check, no
//     allocation, no lock (BenchmarkForwardHop, TestUntracedCostsNoAllocation).
//   - Sample takes no lock: the settings are an immutable snapshot behind
//     an atomic pointer, replaced whole by Update (all of a POST or none).
//   - A collector that is down or slow never blocks a request or grows
//     memory: at most tracing.queue_size spans wait for export per
//     process; over it a span is dropped and counted (Stats), and each
//     export, retries included, ends at tracing.export_timeout.
//   - Spans are named for the stage they time; every span of a request
//     shares the trace id of its master span, so a collector shows the
//     chain client → master → prep → infer.
package tracing
