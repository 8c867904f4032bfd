// Package shm is the shared-memory scoreboard: one memory-mapped file per
// master (PathFor(runtimeDir, master pid)) holding a header and one
// fixed-size record per worker process, called a slot here (not a worker
// position of supervisor/, nor an arena slot of internal/arena). The
// master creates the board and claims a slot before it spawns the worker
// that owns it; the worker updates its own slot (pid, state, heartbeat,
// counters, histograms, per-model counters, the work record of the
// requests it works on now); the master, /metrics, /status and
// `supervisor status` read Snapshots at any time, needing nothing from
// the master but read permission on the file. A prep worker picks an
// infer worker with lb's least connections, never from the board.
//
// Invariants:
//
//   - Writers never lock and readers never block writers: every field is
//     a naturally aligned 64-bit word updated with sync/atomic; a request
//     costs a few atomic adds and no allocation.
//   - A slot has one writer at a time: the master while it claims it (its
//     worker not yet spawned, or reaped), then the worker's goroutines.
//   - Identity strings are written only by Claim, under a per-slot
//     seqlock, and Claim zeroes the counters: a snapshot never mixes two
//     claims, nor one worker's identity with another's counts. SetModels
//     (a reload changing a live worker's models in place) rewrites only
//     the model names, under the same seqlock, and keeps the counters.
//   - Create writes the file under a temporary name and renames it: no
//     reader sees a half-written header.
//   - Open checks the header's arithmetic against the file's size before
//     mapping a slot (ErrTruncated).
//   - The file belongs to the workers' user, who can shrink it: every
//     reader that must survive (master, CLI) touches boards inside Guard,
//     which turns SIGBUS into ErrFault (fault.go says why not a sealed
//     memfd). A worker's own writes are unguarded: it dies and is
//     restarted on the master's new board.
//   - A slot whose worker vanished is recognisable (SlotSnapshot.Stale).
//   - The layout (layout.go) changes only with a new LayoutVersion.
package shm
