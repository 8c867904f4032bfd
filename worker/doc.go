// Package worker is the runtime every worker process shares and the contract
// between the master and its workers.
//
// The master re-executes its own binary with the hidden "worker" command and
// hands the child a Spec (JSON in the SUPERVISOR_WORKER_SPEC environment
// variable or, when larger than MaxSpecEnvBytes, in a memfd named by
// SUPERVISOR_WORKER_SPEC_FD) plus two inherited pipes:
//
//   - fd 3, the event pipe: the worker writes one line when it can serve
//     ("ok") or why it cannot ("error: ..."). Before that, an infer worker
//     writes one "model {json ModelEvent}" line per model state: warming
//     (before it loads a model), then ready or unavailable with the
//     reason; a worker that dies after "warming m" died on m, and the
//     master boots the next one with m in Spec.Unavailable. Readiness is this explicit
//     signal, never a timer. A ready worker keeps writing: "hb" every
//     HeartbeatInterval, and "recycle: <reason>" once when it wants to be
//     replaced (MaxRequests reached).
//   - fd 4, the liveness pipe: the master holds the write end and never
//     writes. When the master dies, for any reason including SIGKILL, the
//     worker reads EOF and exits, so workers never outlive their master.
//
// When Spec.Scoreboard names a board, the worker also reports on its slot
// there (shm): pid, state (ready, draining, stopping), heartbeats, and for
// every inference request (POST) the in-flight count, result and latency;
// the roles add per-model and batcher counters. The master claimed the
// slot for this process before spawning it and frees it once it is reaped.
//
// A worker serves HTTP on its own Unix socket. On SIGTERM it stops accepting,
// finishes in-flight requests (bounded by Spec.DrainTimeout) and exits 0.
// The roles themselves live in worker/prep and worker/infer.
package worker
