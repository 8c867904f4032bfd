// Package sysshm is Triton's system shared memory extension in the
// master: the registry of regions clients register (a /dev/shm object's
// key, an offset, a byte size), its HTTP routes
// (/v2/systemsharedmemory/..., which the gRPC SystemSharedMemory* RPCs
// become), and the rewriting of an infer request whose inputs or outputs
// name a region: the input's bytes are read from the region into the
// binary-extension body the prep worker decodes, and an output's bytes
// are written from the answer into its region, the answer's entry then
// carrying the region's parameters instead of data.
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
// Copies. The master maps the region and the workers never see it, so
// a request through regions saves the client's socket (its write, the
// master's read of the body) and nothing after: an input is copied once
// from the region into the request body in the master (Region.ReadAt),
// then travels as any binary body does (the master's write to the prep
// worker's Unix socket, the prep worker's read, its copy into its arena
// slot, which the infer worker maps); an output travels back as any
// binary answer (the infer worker's frame, the prep worker's answer, the
// socket to the master) and is copied once into its region
// (Region.WriteAt). Mapping the region in the prep worker (for an image
// decode) or the infer worker (for a tensor) would save the master's
// copy and the socket; it needs the object's descriptor passed to a
// worker that may run as another user (workers.user), and is not done.
// A region's descriptor is opened once by the master, at registration,
// so the workers' user needs no access to the client's objects.
//
// Invariants:
//   - The object is opened once, at registration, by the master; it is
//     mapped once (MAP_SHARED), and unmapped only when the region is
//     unregistered (or its key removed by a reload, Retain) and no copy
//     uses it (Registry.Get's count).
//   - Every copy re-fstats the object first: one unlinked (no links
//     left) or truncated below offset+byte_size under the server is
//     refused 400 (ErrGone), and a fault during the copy itself (the
//     object truncated between the fstat and the copy) is contained
//     (debug.SetPanicOnFault and recover) and answered the same way: no
//     process dies of a client's object.
//   - A copy is bounded by the region and by the declared sizes: an
//     input reads exactly shared_memory_byte_size bytes from inside its
//     region; an output larger than its region's room is refused, never
//     written past it.
//   - Nothing here decodes a tensor: the prep worker checks the bytes
//     against the datatype and shape as it does any binary input.
package sysshm
