// Package worker is the runtime every worker process shares and the
// contract between the master and its workers. The master re-executes its
// binary as "worker" with a Spec (SpecEnv, or a memfd past
// MaxSpecEnvBytes), an event pipe (fd 3) and a liveness pipe (fd 4); the
// roles themselves are worker/prep and worker/infer.
//
// Invariants:
//
//   - Readiness is an explicit line on the event pipe ("ok", or "error:
//     ..." and exit 1), never a timer. Before it an infer worker writes a
//     "model {ModelEvent}" line per model state (warming, then ready or
//     unavailable), so a worker that dies after "warming m" died on m.
//   - A ready worker writes "hb" every HeartbeatInterval, and "recycle:
//     <reason>" once when it wants replacing (MaxRequests reached).
//   - The master never writes the liveness pipe: a worker that reads EOF
//     exits, so no worker outlives its master, even one SIGKILLed.
//   - With Spec.Scoreboard a worker reports on its own slot (shm), which
//     the master claimed before the spawn and frees once it is reaped.
//   - A worker serves HTTP on its own Unix socket; on SIGTERM it stops
//     accepting, finishes in-flight requests (bounded by Spec.DrainTimeout)
//     and exits 0.
//
// The processes and pipes for operators: docs/architecture.md ("Processes").
package worker
