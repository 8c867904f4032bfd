// Package workers is the worker-process side of the master: it keeps
// worker positions filled with running, ready worker processes, as
// nginx keeps ngx_process.c apart from the cycle.
//
// Contract: the master (package supervisor) makes a Position per
// planned worker (NewPosition, with a Spawner, a Lifecycle from the
// config and Hooks back into the master), starts it (Start, BootAll),
// hands it reloads (Reconfigure) and stops it (StopAndWait, StopAll). A
// Position tells the master through its Hooks when its serving Process
// changes (Changed: the master routes to it), when a replaced one must
// be drained (Retire) and when one exits on its own (Exited: the
// CrashLog the front's poison quarantine reads). Everything the master
// reads of a worker is a Process's accessors and a Position's Status.
// The package never imports the master.
//
// A Spawner starts a worker by re-executing the binary as `<exe>
// worker`: the master makes its socket (owned by the workers' user,
// Credentials), pins it to its cpuset and NUMA memory from its first
// instruction (startPlaced), gives it a scoreboard record (Start), and
// passes the spec in the environment or, when large, a memfd. Engine
// caches of TensorRT are made here for workers that dropped privileges
// (MakeEngineCaches).
//
// Invariants:
//   - One goroutine per position (run) owns its processes: it spawns,
//     waits for readiness, restarts with backoff, recycles (replace.go)
//     and retires them; others read its state under its mutex and talk
//     to it by channel (reconf, stop).
//   - A position's stop channel is closed once, whoever asks first; a
//     position stopped before it started never spawns; StopAndWait
//     returns only when its processes, retiring ones included, are
//     reaped.
//   - A replacement serves before the old process is retired
//     (surge-first), unless Hooks.Room says the old one's GPU has no
//     memory for both: then the old one is drained and stopped first
//     (drain-first), and status says so (LastReplacement). At most
//     max_surge replacements of a pool run at once (Lifecycle's surge,
//     kept across reloads by NewLifecycle).
//   - A worker that dies, or is killed at boot_timeout, while loading a
//     model boots again at once without it (at most one extra boot per
//     model); a reload whose new worker loses a model the old one
//     serves is refused (LoadFailed) and the old one keeps serving.
//   - A scoreboard record is claimed before its process's spawn and
//     released once it is reaped, after what it was at work on is read.
package workers
