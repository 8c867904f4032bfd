// Package workers is the worker-process side of the master: it keeps
// worker positions filled with running, ready worker processes (as nginx
// keeps ngx_process.c apart from the cycle). The master makes a Position
// per planned worker (NewPosition: a Spawner, a Lifecycle, Hooks back into
// the master), starts it (Start, BootAll), reconfigures it (Reconfigure)
// and stops it (StopAndWait, StopAll); it reads a worker only through
// Process's accessors and Position's Status. It never imports the master.
//
// Invariants:
//
//   - One goroutine per position (run) owns its processes: it spawns,
//     waits for readiness, restarts with backoff, recycles (replace.go)
//     and retires; others read its state under its mutex and talk to it by
//     channel.
//   - A position's Hooks tell the master when its serving process changes
//     (Changed), when a replaced one must drain (Retire) and when one
//     exits on its own (Exited: the CrashLog the poison quarantine reads).
//   - A replacement serves before the old process is retired
//     (surge-first), unless Hooks.Room says the old one's GPU has no
//     memory for both: then the old one is drained and stopped first
//     (drain-first), and status says so (LastReplacement). At most
//     max_surge replacements of a pool boot at once (kept across reloads
//     by NewLifecycle).
//   - A position stopped before it started never spawns; StopAndWait
//     returns only when its processes, retiring ones included, are reaped.
//   - A worker that dies, or is killed at boot_timeout, while loading a
//     model boots again at once without it (at most one extra boot per
//     model); a reload whose new worker loses a model the old one serves
//     is refused (LoadFailed) and the old one keeps serving.
//   - A scoreboard record is claimed before its process's spawn and
//     released once it is reaped, after what it was at work on is read.
//
// Restarts, backoff, recycling and their settings: docs/architecture.md
// ("Worker positions").
package workers
