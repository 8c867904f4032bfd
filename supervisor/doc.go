// Package supervisor is the master process: it plans the workers of a
// config (supervisor/config), spawns them (re-executing its own binary),
// keeps every worker position filled with a ready worker, serves the
// public listener (supervisor/front) through the least-connections lb,
// answers the control socket (the server; the contract and client are
// supervisor/control), serves the metrics listener (what it renders is
// supervisor/status) and the gRPC listener (supervisor/grpcfront, whose
// RPCs come back as V2 HTTP requests through the front's ServeInternal:
// the same admission and lb), reloads, upgrades, and stops everything in
// order.
//
// Run is a group of actors (actors.go, oklog/run): signals (stop requests,
// SIGHUP, SIGUSR2, systemd's watchdog), the prep autoscaler
// (supervisor/autoscale's Scaler), front (the public listener),
// workers (boot, readiness, then stop), metrics and control. Each has its
// own execute and interrupt; the first to return ends the group, and the
// interrupts run one after another in that order, which is the stop
// order. Listeners, the scoreboard and the runtime dir are created before
// the group and released by defers only, each registered right after its
// resource is created.
//
// Phases (phase.go): starting, serving, upgrading, lame duck, draining,
// handed over, stopped, and the ones a stop during an upgrade goes
// through; one phaseState, moved only by its transitions table, decides
// readiness, which reloads and upgrades may begin, and whether a stop
// may shut the sockets down.
//
// Ownership: the worker positions and their processes are
// supervisor/workers' (one goroutine per position owns its processes);
// the master keeps the pools (pool: the positions of a role, closed by
// shutdown). Reloads run one at a time on the reload queue's goroutine;
// reloads, upgrades and the end of shutdown are serialised by opsMu. The
// front, the metrics listener and the control socket serve on their own
// goroutines and only read the master's state.
//
// A generation is one applied config: 1 for the first, one more for each
// reload that passes its checks (valid, reloadable, fits the host, keys
// load), even if some workers then fail to boot; a master started by an
// upgrade continues its parent's count (SUPERVISOR_GENERATION).
// Every worker is spawned with the generation of its spec, and the
// scoreboard's header carries the one in force, so a record of an older
// generation is recognisably stale.
//
// What a reload may change: everything but listen, metrics.listen, grpc,
// workers.user/group and runtime_dir (reloadable refuses those: they
// need an upgrade or a restart, and nothing changes). The first
// min(old, new) positions of each pool are kept: a position whose worker spec is
// unchanged keeps its worker, one whose spec changed replaces it
// surge-first; positions beyond the new count are taken out of routing,
// drained (a prep worker until the lb has nothing in flight on it) and
// stopped; new positions boot, and one whose first boot fails is dropped.
// Infer workers are reconciled before prep workers, so prep workers
// booted by the reload get the new infer workers. A config that fails
// those checks changes nothing.
//
// Prep autoscaling (prepscale.go; the rules are supervisor/autoscale's):
// with prep.max_workers set, the autoscaler resizes the prep pool one
// worker at a time through the reload's resize (reconcile to a count:
// new positions boot placed and pinned by the plan for that count, removed
// ones leave in the retire order below, kept ones keep their workers and
// templates), under opsMu, and never waits for it: during a reload, an
// upgrade or a stop its decision is dropped. The config in force carries
// the pool's size in prep.workers (its plan covers exactly the positions
// the pool has), and a reload keeps that size within the new bounds
// rather than going back to the file's prep.workers; placement checks
// that max_workers fits the host, so a grow never fails for want of CPUs.
//
// Retire order for a worker that serves: take it out of what routes to it
// (the lb's pool for a prep worker, every prep worker's upstream list for
// an infer worker); for a prep worker, wait until the lb reports it idle
// (bounded by the drain timeout, or until it exits); then stop it, bounded
// by the same drain (an infer worker drains its own in-flight requests).
//
// Invariants:
//   - The public listener answers 503 until every pool has a ready worker;
//     /v2/health/ready says so.
//   - Infer workers boot before prep workers (prep learns model metadata
//     from an infer worker).
//   - Only ready prep workers are in the lb pool; a worker that exits is
//     taken out before it is replaced.
//   - A model that fails to load or warm up makes only itself unavailable:
//     infer workers report each model's state on their event pipe before
//     "ok" (worker.ModelState). A worker that dies while warming a model,
//     or is killed there at boot_timeout, is booted again at once without
//     it (supervisor/workers): at most one extra boot per model, never a
//     crash loop, and never a master that exits at start for one slow
//     model. strict_readiness adds "every model serves" to
//     /v2/health/ready.
//   - Stop drains in order: with drain_grace, first a lame duck
//     (lameduck.go: ready answers 503 while everything still serves, a
//     second stop ends it), then the public listener (in-flight requests
//     finish, bounded by shutdown_timeout), then prep workers, then infer
//     workers.
//     Run returns only when every worker has been reaped.
//   - Under systemd the stop must fit the unit's TimeoutStopSec, or the
//     master is SIGKILLed mid-drain: at start and after each reload that
//     passes, the master compares its stop bound with the unit's
//     (supervisor/unitstop, over D-Bus, bounded by unitReadTimeout) and,
//     when it does not fit, logs a warning with the fix and shows it in
//     status (Warnings) and STATUS=. It never fails a start over it.
//   - Stop wins over reloads: once shutdown starts, reloads and upgrades
//     are refused (workers.ErrStopping; phase.changeRefused); shutdown
//     closes each pool (no position joins it afterwards), stops every
//     position in it, which cuts short the boots of a reload in flight,
//     then waits for that reload to return, so no worker a reload started
//     outlives the master. A stop during startup cuts the first boots
//     short and exits 0.
//   - A stop during an upgrade stops the instance: a master started by an
//     upgrade answers the shared control socket only once it is ready, so
//     the stop reaches the old master, which passes it on to the new one
//     once the upgrade has handed over (or the upgrade fails), and answers
//     only after that.
//   - Shared state is checked, not trusted: the runtime dir (control
//     socket, worker sockets, pid file) must be a directory, not a
//     symlink, owned by the master's euid, that group and others cannot
//     write (control.ErrUnsafeRuntimeDir otherwise); the master creates it 0700,
//     and the CLI talks only to a dir owned by root or its caller. The
//     pid file is written by rename, never through a symlink. The
//     scoreboard (supervisor/board: a record per worker process, claimed
//     before its spawn, released when it is reaped), which the workers'
//     user may truncate, is touched only under shm.Guard: a fault
//     replaces the board instead of killing the master.
//   - Run releases what it creates with defers, in reverse order, after
//     the actors have drained the front and stopped the workers: the
//     metrics listener, the control socket, the public listener, the
//     scoreboard (so a failed start, e.g. an unknown workers.user, leaves
//     no /dev/shm file), the runtime dir; the clients waiting on
//     `supervisor stop` are answered last.
//   - The public listener is supervisor/front's (its doc.go states the
//     admission, body budget, prefix check, connection cap and lingering
//     close): it reads the master only through front.Backend (the config
//     in force, readiness) and the lb, and the master drives it through
//     SetKeys, SetServing and Drain. A reload's API keys are loaded
//     before it commits, and put in force with its config.
//   - The config served is the file as last read with the repository
//     API's state applied over it (supervisor/repository): a reload
//     re-reads the file and plans the config from both (repo.Plan); the
//     state becomes current only when the reload stores that config
//     (repo.Commit), so a reload that fails changes neither. API loads and
//     unloads are reloads through the reload queue (repository.Master),
//     one at a time; their handler waits for the outcome or the start of a
//     stop, never for the boots a stop cuts short.
//   - The metrics listener (supervisor/metrics) answers only an IP
//     literal or a Host name it serves (loopback, its listen host,
//     metrics.allowed_hosts); other names get 403.
//
// Size: about 3,100 non-test lines (from 4,300) once the worker-process side
// (supervisor/workers) left; what remains is the master's lifecycle
// around the workers: phases, actors, pools, reload, upgrade, the control
// socket's server, the response caches' segments and the autoscaler's
// resizing, all sharing *Master's state.
package supervisor
