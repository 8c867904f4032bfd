// Package supervisor is the master process: it plans the workers of a
// config (supervisor/config), spawns them (re-executing its own binary),
// keeps every worker position filled with a ready worker, serves the public
// listener through the least-connections lb, answers the control socket
// (the server; the contract and client are supervisor/control), serves
// the metrics listener (what it renders is supervisor/status) and the gRPC
// listener (supervisor/grpcfront, whose RPCs come back as V2 HTTP requests
// through serveInternal: the same admission and lb), reloads, upgrades,
// and stops everything in order.
//
// Run is a group of actors (actors.go, oklog/run): signals (stop requests,
// SIGHUP, SIGUSR2, systemd's watchdog), front (the public listener),
// workers (boot, readiness, then stop), metrics and control. Each has its
// own execute and interrupt; the first to return ends the group, and the
// interrupts run one after another in that order, which is the stop
// order. Listeners, the scoreboard and the runtime dir are created before
// the group and released by defers only, each registered right after its
// resource is created.
//
// Ownership: each worker position (e.g. "prep-1") has one
// goroutine (position.run) that owns its processes: it spawns, waits for
// readiness, restarts with backoff, recycles and retires them; the rest
// of the master reads a position's state under its mutex and talks to it by
// channel (reconfigure, stop). Reloads run one at a time on the reload
// queue's goroutine; reloads, upgrades and the end of shutdown are
// serialised by opsMu. The front, the metrics listener (two goroutines:
// serving and the chart's sampler) and the control socket (one goroutine
// per connection) each serve on their own goroutines and only read the
// master's state.
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
// surge-first; positions beyond the new count are taken out of routing and
// stopped; new positions boot, and one whose first boot fails is dropped.
// Infer workers are reconciled before prep workers, so prep workers
// booted by the reload get the new infer workers. A config that fails
// those checks changes nothing.
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
//     "ok" (worker.ModelState). A worker that dies while warming a model is
//     booted again at once without it (position.skipped, keyed by the model's
//     path and file version): at most one extra boot per model, never a
//     crash loop. strict_readiness adds "every model serves" to
//     /v2/health/ready.
//   - Stop drains in order: with drain_grace, first a lame duck
//     (lameduck.go: ready answers 503 while everything still serves, a
//     second stop ends it), then the public listener (in-flight requests
//     finish, bounded by shutdown_timeout), then prep workers, then infer
//     workers.
//     Run returns only when every worker has been reaped.
//   - Stop wins over reloads: once shutdown starts, reloads and upgrades
//     are refused (ErrStopping); shutdown closes each pool (no position joins
//     it afterwards), stops every position in it, which cuts short the boots
//     of a reload in flight, then waits for that reload to return, so no
//     worker a reload started outlives the master. A position's stop channel
//     is closed once (sync.Once), whoever asks first; a position stopped
//     before it started never spawns. A stop during startup cuts the
//     first boots short and exits 0.
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
//     scoreboard, which the workers' user may truncate, is touched only
//     under shm.Guard: a fault replaces the board instead of killing the
//     master.
//   - Run releases what it creates with defers, in reverse order, after
//     the actors have drained the front and stopped the workers: the
//     metrics listener, the control socket, the public listener, the
//     scoreboard (so a failed start, e.g. an unknown workers.user, leaves
//     no /dev/shm file), the runtime dir; the clients waiting on
//     `supervisor stop` are answered last.
//   - A public request is decided from its header alone (admission.go):
//     route, method, model, API key, rate, Content-Length against
//     max_body_bytes, readiness, max_in_flight and the body budget. A
//     refused request gets no body buffer; its connection is closed after
//     the answer when it declared a body.
//   - The master holds at most limits.max_body_bytes_in_flight body bytes
//     (reserved from the declared length before reading; a chunked body
//     as it grows), in buffers of its own, not pooled. A body of 1 MiB or
//     more is an anonymous mapping (bodybuf.go), unmapped by finish when
//     the request ends, after it is detached from the request: nothing
//     reads it later (the lb's upstream exchange, retries included, is
//     synchronous on the handler's goroutine), so RSS falls as each
//     request ends. Smaller bodies are Go heap: the master's soft memory
//     limit (memlimit.go) is the budget plus a headroom, so answered
//     bodies are collected before new ones push RSS past it.
//   - A body larger than the first 64 KiB buffer is judged from that
//     buffer before the rest is read (precheck.go): a prep worker, asked
//     through the lb with worker.PrefixHeader, answers 204 or the 400/413
//     the whole request would get; a refusal is answered at once, the
//     rest unread, the connection closed. The check is advisory: no
//     answer within a second (or the request's deadline), or any other
//     answer, lets the body go on. Only the master sets PrefixHeader:
//     clients' are removed.
//   - Every admitted verdict is finished exactly once, by the handler or
//     by the transport error handler, giving back its max_in_flight place
//     and budget bytes; a body cut by body_timeout/body_min_rate (408)
//     gives them back too.
//   - The config served is the file as last read with the repository
//     API's state applied over it (repository.go): a reload re-reads the
//     file and keeps that state for models still in it; the state becomes
//     current only when a reload stores the config made from it
//     (repository.commit), so a reload that fails changes neither. API
//     loads and unloads are reloads, one at a time (repository.ops); their
//     handler waits for the outcome or the start of a stop, never for the
//     boots a stop cuts short.
//   - The metrics listener answers only Host names it serves (loopback,
//     its listen host, metrics.allowed_hosts); others get 403.
//
// Size: about 6,000 non-test lines, past the 2,500 a package should stay
// under. Two seams of their own account for most of the excess, and are
// the next splits: the public front (admission, body reading, budget and
// prefix check, connection cap, lingering close, auth, the metrics
// listener; about 1,800 lines), which reads the master's state through a
// few atomics and the lb, to supervisor/front; and the repository API
// (repository*.go, repooverride.go; about 700), which needs only the
// reload queue, to supervisor/repository.
package supervisor
