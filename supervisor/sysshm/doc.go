// Package sysshm is Triton's system shared memory extension: the
// master's registry of regions clients register (a /dev/shm object's
// key, an offset, a byte size), its HTTP routes
// (/v2/systemsharedmemory/..., which the gRPC SystemSharedMemory* RPCs
// become), the rewriting of an infer request whose inputs or outputs
// name a region (Inline), and the prep worker's side (Reader, Splice,
// Deliver): the master checks each region a request names and sends
// the prep worker a reference (Ref, RefsHeader) instead of bytes; the
// prep worker reads the inputs from their regions and writes the
// outputs into theirs, its answer's entries then carrying the regions'
// parameters instead of data.
//
// A region is a new way in for a client's bytes, held to the care a body
// is: a key is the name of one object directly in /dev/shm, opened
// without following links (openat on a /dev/shm directory descriptor,
// O_NOFOLLOW, no '/' inside the name), never one of the server's own
// (supervisor-*: scoreboards, response cache); the object must be a regular file
// that holds offset+byte_size bytes (fstat); offsets and sizes are
// overflow-checked; a region is seen and used only with the API key that
// registered it (Owner: its SHA-256; "" when auth is off); each key holds
// at most limits.shared_memory_regions regions and
// limits.shared_memory_bytes mapped bytes.
//
// Copies. An input is copied once, by the prep worker, from the region
// into the request body it decodes (Reader.Read: pread with the
// master's descriptor, into a buffer charged to the worker's bodies'
// lane), and from there once into its arena slot, which the infer
// worker maps: the master, the Unix socket and the client's socket
// carry only the JSON. The arena copy stays: the bytes the prep worker
// validated and keyed (response cache, poison quarantine) must be the
// bytes that run, and the client may write its region at any time, so
// the infer worker does not read the region. An output comes back from
// the infer worker as any (its frame in the arena slot, parsed by the
// prep worker, rendered into the binary answer) and is copied once from
// that answer into its region (Reader.Write: pwrite); the answer to the
// master is its JSON alone. Rendering it from the tensors straight into
// the region would save the render's copy, and is not done.
//
// Descriptors. The prep worker may run as another user
// (workers.user), who could not open the client's object, and a name
// opened again could be another object by then; so the worker uses the
// descriptor the master opened at registration, asked for by region id
// over a socket pair it inherits at spawn (workerfd.go says why pulled,
// not pushed), and checks its device and inode against the Ref's.
//
// The poison quarantine keys a request on its tensor bytes, whatever
// way they came (Pending.Splice reads them from the master's mapping,
// and only when a key is needed): a region's identity and a hash of its
// content would key the same tensor apart from its inline sending,
// and a poison body would be refused one way and sent the other. The
// response cache keys in the prep worker, on the bytes it read.
//
// Invariants:
//   - The object is opened once, at registration, by the master; it is
//     mapped once (MAP_SHARED), and unmapped only when the region is
//     unregistered (or its key removed by a reload, Retain) and no copy
//     uses it (Registry.Get's count). A prep worker holds a duplicate of
//     the descriptor, never maps it, and lets it go once the object is
//     unlinked (or past 64 held); an id unregistered is never answered.
//   - Every copy re-fstats the object first: one unlinked (no links
//     left) or truncated below offset+byte_size under the server is
//     refused 400 (ErrGone), and a fault during the copy itself (the
//     object truncated between the fstat and the copy) is contained
//     (debug.SetPanicOnFault and recover) and answered the same way; the
//     prep worker's pread cannot fault (a truncation is a short read,
//     400): no process dies of a client's object.
//   - A copy is bounded by the region and by the declared sizes: an
//     input reads exactly shared_memory_byte_size bytes from inside its
//     region; an output larger than its region's room is refused, never
//     written past it.
//   - Nothing here decodes a tensor: the prep worker checks the bytes
//     against the datatype and shape as it does any binary input.
package sysshm
