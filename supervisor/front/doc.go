// Package front is the master's public listener: it decides every
// request from its header (with supervisor/admission), reads admitted
// bodies into buffers of its own under the body budget, answers the
// routes the master serves itself (health, server metadata, the
// repository routes through Repository), and forwards inference requests
// to the lb (forward.go). The gRPC listener's RPCs come in through
// ServeInternal, under the same admission Gate. The master (Backend)
// gives it the config in force and its readiness; the front never sees
// workers, pools or the master itself.
//
// Invariants:
//   - A refused request gets no body buffer: its body is declared empty
//     to fasthttp and its connection closed after the answer, by a
//     lingering close (linger.go).
//   - Every admitted verdict is finished exactly once (handler or
//     transport error handler), giving back its max_in_flight place and
//     budget bytes (admission.go).
//   - Bodies, and proxied answers over 64 KiB (answerbudget.go), are
//     charges in the one body budget (admission.Bodies, an
//     internal/budget), each released once; bodies of 1 MiB or more are
//     anonymous mappings unmapped by finish (bodybuf.go).
//   - A body is checked from its first 64 KiB by a prep worker before the
//     rest is read (precheck.go); only the front sets worker.PrefixHeader.
//   - A forwarded request goes through the poison quarantine's guard
//     (forward.go, supervisor/quarantine): refused 422 when quarantined,
//     its worker's death weighed after each send.
//   - A client's hang-up abandons the worker exchange (clientgone.go).
//   - Connections are capped at limits.max_connections by the listener
//     CapConnections returns (conncap.go); serve the Server on it.
//   - SetServing(false) refuses inference from the header; keep it true
//     while draining (Drain asks clients to close instead).
//   - Everything shared across connections is atomic, a sync.Map or a
//     handoff.Map; the config is read once per request, so a reload
//     applies to the next.
package front
