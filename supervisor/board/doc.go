// Package board is the master's side of the shared-memory scoreboard
// (shm): one board file per master, a record claimed for each worker
// process it spawns, the counters of reaped processes kept as retired
// totals, and recovery from a board the workers' user damaged.
//
// Invariants:
//   - A record belongs to one worker process, from Claim (before the
//     spawn; the record's path and index go to the worker in its spec) to
//     Release (once the process is reaped, or failed to start). A worker
//     position running two processes (a recycle, a reload's surge) has
//     two records.
//   - Counters never go back: Release adds a record's counters to the
//     retired totals before the record is reused, and Snapshot returns
//     the records and those totals consistently (a record released
//     meanwhile is counted once).
//   - The file is touched only under the Board's mutex and shm.Guard: a
//     fault (the file truncated under the mapping) is counted (Fault),
//     and the board replaced by a fresh one at the same path, given to
//     the workers' user (SetOwner); records of the damaged board are
//     forgotten, and their workers fault, exit and are restarted.
//   - A nil *Board is valid and records nothing (no /dev/shm); after
//     Remove every call does nothing.
//
// Goroutines: none of its own. The master calls it from the goroutines
// that spawn and reap workers, reloads (Stamp) and the metrics listener
// (Snapshot); all of them serialise on the mutex, which is never held
// across anything but the board's own memory.
package board
