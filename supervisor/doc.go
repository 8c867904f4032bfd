// Package supervisor is the master process. Run plans the workers of a
// config (supervisor/config), keeps every worker position filled with a
// ready worker (supervisor/workers), serves the public, gRPC, metrics and
// control listeners (supervisor/front, grpcfront, metrics, control), and
// reloads, upgrades and stops everything in order. Run returns only when
// every worker it started has been reaped.
//
// Invariants:
//
//   - One phase (supervisor/phase: starting, serving, upgrading, lame duck,
//     draining, handed over, stopped), moved only by its transition table,
//     decides readiness, which reloads and upgrades may begin, and whether
//     a stop may shut the sockets down.
//   - The public listener answers 503 until every pool has a ready worker.
//     Infer workers boot before prep workers, and only ready prep workers
//     are in the lb pool.
//   - A model that fails to load or warm up makes only itself unavailable;
//     supervisor/workers boots a worker again without it, at most once per
//     model.
//   - A generation is one applied config; a reload either passes every
//     check (valid, reloadable, fits the host, keys load) and bumps it, or
//     changes nothing. Reloads, upgrades, prep resizes (prepscale.go) and the
//     end of shutdown are serialised by opsMu.
//   - Stop wins: once it starts, reloads and upgrades are refused
//     (workers.ErrStopping), and one in flight is cut short and waited for,
//     so no worker a reload started outlives the master.
//   - Stop order is the actors' order (actors.go): signals, autoscaler,
//     front (lame duck, then drain), workers (prep, then infer), metrics,
//     control. Resources made before the actors are released by defers in
//     reverse order (master.go runIn).
//   - A serving worker is retired by taking it out of routing, draining it
//     (a prep worker until the lb is idle on it), then stopping it
//     (master.go retire).
//   - Shared state is checked, not trusted: the runtime dir's ownership
//     (supervisor/rundir), and the scoreboard (supervisor/board), touched
//     only under shm.Guard because the workers' user may truncate it.
//   - The front, the metrics listener and the control socket only read the
//     master's state, through front.Backend and the status views.
//
// Operators' reference: docs/architecture.md (master lifecycle) and
// docs/operations.md (reload, upgrade, stop).
package supervisor
