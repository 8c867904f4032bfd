// Package shm is the shared-memory scoreboard: one memory-mapped file per
// supervisor instance through which every worker publishes what it is doing,
// and from which the master (its readiness checks, /metrics, /status) and
// `supervisor status` read, without asking anyone. Workers only write their
// own record; a prep worker picks an infer worker with lb's least
// connections, never from the board.
//
// Words: the board holds one record per worker process, called a slot in
// this package's API and layout (Slot, SlotSnapshot, the slot count). It is
// neither the master's worker position (supervisor/, which claims a record
// for each process it spawns there) nor an arena slot (internal/arena, a
// prep worker's shared-memory buffer for one request's tensors).
//
// # Model
//
// The master creates the board (Create) at PathFor(runtimeDir, its pid)
// with a fixed number of slots, one per worker process, and claims a slot (Slot.Claim) before it spawns the
// worker that will own it. The worker opens the board (Open) and updates its
// own slot: pid, state, counters, histograms, heartbeat. Readers (Open or
// OpenReadOnly) take Snapshots at any time; the CLI needs nothing from the
// master but read permission on the file.
//
// # Invariants
//
//   - Writers never lock and readers never block writers. Every field is a
//     64-bit word updated with sync/atomic; a request costs a handful of
//     atomic adds and no allocation.
//   - A slot has one writer at a time: the master while it claims the slot
//     (the worker must not exist yet, or must have exited), then the worker.
//     Counter updates may come from any number of goroutines of that worker.
//   - The identity strings (role, name, models, device, cpus) are written
//     only by Claim, inside a per-slot seqlock: the sequence word is odd
//     while Claim writes. Readers copy the slot and retry when the sequence
//     was odd or changed, so a snapshot holds one claim's identity, never a
//     mix of two. Claim also zeroes the counters, so a snapshot never pairs
//     one worker's identity with another's counts.
//   - Create builds the file under a temporary name and renames it into
//     place: nobody ever sees a half-written header, and a process that
//     still maps an older board keeps a valid (now unlinked) mapping.
//   - Open and OpenReadOnly check the header's arithmetic against the
//     file's size (fstat) before they trust it: a slot count whose slots
//     do not fit the file is ErrTruncated, so no slot is mapped past the
//     end of the file as it was when opened.
//   - A board may still shrink after it was opened: its file belongs to the
//     workers' user (they must write it), and ftruncate needs no more than
//     that. Touching a page past the new end raises SIGBUS, which kills a
//     Go process. Every reader that must survive that (the master, the
//     CLI) touches boards only inside Guard, which turns the fault into
//     ErrFault (debug.SetPanicOnFault, per goroutine, plus recover). The
//     master then drops the board and creates a fresh one (see
//     supervisor/board). A worker's own per-request writes are not
//     guarded: a worker that faults dies and is restarted, on the new
//     board.
//
// # Why Guard, and not a sealed memfd
//
// A memfd sealed with F_SEAL_SHRINK cannot be truncated at all, and passed
// to workers as an inherited fd it needs no file anyone else can open.
// But `supervisor status` reads the board from another process, by path,
// precisely so that it answers when the master does not; a memfd has no
// path but /proc/<master>/fd/N, which needs ptrace access to the master,
// and upgrades would have to hand it on. A fault guard keeps the file, the
// CLI and the upgrade story as they are, costs one deferred call per
// master-side access (never per request), and also covers the CLI's
// mapping, which a seal on the master's fd would not protect.
//   - A slot whose worker vanished is recognisable (SlotSnapshot.Stale): its
//     pid no longer exists, or its generation is older than the header's.
//
// # Layout (version 3)
//
// All integers are 64-bit words in the host's byte order (little-endian on
// amd64 and arm64; the board never leaves the host), except the four 32-bit
// size fields. Times are Unix nanoseconds, 0 meaning unset. The header is
// 128 bytes; slot i starts at 128 + i*4096.
//
//	header                        slot (4096 bytes)
//	  0 magic "SCOREBRD"            0 seq (seqlock)     512 latency buckets [20]
//	  8 version uint32              8 state             672 latency sum (ns)
//	 12 header size uint32         16 pid               680 queue-time buckets [20]
//	 16 slot size uint32           24 generation        840 queue-time sum (ns)
//	 20 slot count uint32          32 recycle after     848 batch-size buckets [10]
//	 24 master pid                 40 spawned           928 batch-size sum
//	 32 generation                 48 ready             936 reserved
//	 40 master start               56 heartbeat
//	 48 reserved                   64 requests
//	                               72 in-flight
//	                               80 errors
//	                               88 queue depth
//	                               96 arena slots
//	                              104 arena slots in use
//	                              112 arena full since
//	                              120 arena full count
//	                              128 role   [16]byte
//	                              144 name   [48]byte
//	                              192 models [128]byte (comma-separated)
//	                              320 device [64]byte
//	                              384 cpus   [128]byte
//	                             1024 per-model counters [MaxModels], 128 bytes each:
//	                                    0 success        48 queue count
//	                                    8 failures [4]   56 queue ns
//	                                   40 request ns     64 inferences (rows)
//	                                   72 executions     80 compute input ns
//	                                   88 compute infer  96 compute output ns
//	                             2048 work record (work.go):
//	                                    0 missed         8 entries [255]:
//	                                                       unit<<48 | token
//
// Version 3 added the work record: the requests a worker is working on
// now (an infer worker's model runs, a prep worker's decodes), which the
// master reads after a crash to blame only those.
// Version 2 added the per-model counters (Triton's per-model statistics:
// failures by reason, inference and execution counts, queue and compute
// durations, each a running total). The arena words (a prep worker's
// shared-memory arena: its slot count, slots in use, since when every slot
// has been in use, and the requests turned away for want of one) took the
// four words reserved at 96 without a version bump: they were zero, and
// zero still means "no arena", so readers of either age agree.
//
// Strings are NUL-padded and truncated (at a UTF-8 boundary) to their field.
// Histogram buckets are non-cumulative counters, the last one catching
// everything above the largest bound; see LatencyBounds and
// BatchSizeBounds. Any change to this layout must bump LayoutVersion.
//
// # Soundness of the atomics
//
// The fields are accessed through unsafe pointers into the mapping. This is
// sound because mmap returns page-aligned memory, the header size and slot
// size are multiples of 8 and every field offset is a multiple of 8, so every
// 64-bit word is naturally aligned; the memory is outside the Go heap, so the
// garbage collector never moves it. Atomic instructions on shared mappings
// are coherent across processes on the same host.
package shm
