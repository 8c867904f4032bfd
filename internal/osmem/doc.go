// Package osmem hands the memory a burst freed back to the OS promptly.
//
// The Go runtime returns freed heap gradually (its background
// scavenger), and until the next GC not at all: after a flood of
// connections, of large bodies, of decompression bombs or of large image
// decodes a process would keep its peak RSS for minutes, which an
// operator reads as a leak and the OOM killer as real use. The model:
//
//   - A Gauge tracks a level the caller knows to hold memory (body bytes
//     held, connections open, bytes decompressed, decode bytes admitted)
//     and its peak since the last release.
//   - When the level falls back under a quarter of a peak that reached
//     the caller's threshold, the burst is over: the Gauge asks its Freer
//     to release.
//   - A Freer runs two collections and debug.FreeOSMemory, at most once
//     per FreeInterval (later rather than never when bursts come closer
//     together), on a timer goroutine, never on the caller's.
//
// Users: the master's front (body budget, open connections) and each
// prep worker (decompressed bodies, the decode gate's large lane).
//
// Pitfalls for the caller: the threshold is what makes a release worth
// its forced GC, so pick one that a healthy load rarely crosses; a Gauge
// releases only memory the runtime has freed, so whatever still
// references the burst's buffers (a pool that is never emptied) keeps
// them.
package osmem
