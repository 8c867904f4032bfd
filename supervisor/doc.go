// Package supervisor is the master process: it loads and validates the
// config, plans the workers, spawns them (re-executing its own binary),
// keeps every slot filled with a ready worker, serves the public listener
// through the least-connections lb, answers the control socket, and stops
// everything in order.
//
// Invariants:
//   - The public listener answers 503 until every pool has a ready worker;
//     /v2/health/ready says so.
//   - Infer workers boot before prep workers (prep learns model metadata
//     from an infer worker).
//   - Only ready prep workers are in the lb pool; a worker that exits is
//     taken out before it is replaced.
//   - Stop drains in order: the public listener (in-flight requests finish,
//     bounded by shutdown_timeout), then prep workers, then infer workers.
//     Run returns only when every worker has been reaped.
//   - A public request is decided from its header alone (admission.go):
//     route, method, model, API key, rate, Content-Length against
//     max_body_bytes, readiness, max_in_flight and the body budget. A
//     refused request gets no body buffer; its connection is closed after
//     the answer when it declared a body.
//   - The master holds at most limits.max_body_bytes_in_flight body bytes
//     (reserved from the declared length before reading; a chunked body
//     as it grows), in buffers of its own that are dropped, not pooled,
//     when the request ends. Its memory is bounded by configuration, not
//     by what clients declare.
//   - Every admitted verdict is finished exactly once, by the handler or
//     by the transport error handler, giving back its max_in_flight place
//     and budget bytes; a body cut by body_timeout/body_min_rate (408)
//     gives them back too.
//   - The metrics listener answers only Host names it serves (loopback,
//     its listen host, metrics.allowed_hosts); others get 403.
package supervisor
