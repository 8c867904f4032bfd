// Package arena is the shared-memory tensor handoff between a prep worker
// and the infer workers: a sealed memfd holding a ring of fixed-size
// slots. The prep worker owns the arena; it writes a request's tensor frame
// into a free slot once and sends the infer worker only a descriptor (the
// arena's Ref and the slot's Ticket). The infer worker reads the inputs in
// place and writes its reply frame into the same slot.
//
// # Model
//
//   - The arena is a memfd (memfd_create), not a file in /dev/shm: it has
//     no name anyone can pre-create, replace with a symlink or truncate by
//     path, and it vanishes with the last process that maps it. The prep
//     worker seals it (F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL) before anyone
//     else can see it; an infer worker opens it as /proc/<prep pid>/fd/<n>
//     and refuses it unless F_GET_SEALS shows those seals. A sealed arena
//     cannot shrink, so a mapping of it can never fault with SIGBUS. That
//     matters because ONNX Runtime reads inputs in place from C, where a
//     SIGBUS cannot be recovered: the alternative (a /dev/shm file opened
//     O_EXCL|O_NOFOLLOW plus debug.SetPanicOnFault) protects only Go reads.
//   - The header (magic, slot count, slot size, a random token) is checked
//     with overflow-safe arithmetic against the size fstat reports, and the
//     token against the descriptor's, before anything is mapped.
//   - Each slot starts with a 64-bit state word: state (Free, Sent,
//     Claimed, Done), the claiming infer worker's pid and a sequence number
//     bumped on every Acquire; the claimer's start time follows it. The
//     sequence goes with the descriptor, so a descriptor from an earlier use
//     of the slot can never claim it.
//   - An infer worker claims a slot (CAS Sent(seq) -> Claimed(seq, pid))
//     before it touches the data, refuses a slot it cannot claim, and marks
//     it Done(seq) when it is finished with it, whatever the outcome.
//   - The prep worker settles every slot it handed out, once, whatever
//     happened to the request: CAS Sent(seq) -> Free succeeding proves no
//     infer worker will ever touch the slot (revoked: free now); Done(seq)
//     frees it now; Claimed(seq, pid) waits for Done or for the claimer to
//     be dead (/proc/<pid>/stat gone, a zombie, or another start time). An
//     infer worker that was only taken out of the prep worker's upstream
//     list (recycled, drained) is alive and finishes its requests: removal
//     is not death, so its slots wait for Done.
//   - A claimer that stays alive keeps its slot: freeing it would let its
//     late reply overwrite another request's tensors. A hung infer worker is
//     the master's to kill (heartbeat_timeout); its slots then come back.
//     Only when liveness cannot be decided at all (/proc unreadable) does a
//     slot come back after the backstop grace the caller gives.
//   - Acquire takes no slot for a request whose deadline has passed
//     (ErrExpired) and waits at most until the deadline (ErrFull).
//
// # Pitfalls for the caller
//
//   - Call Settle exactly once per Ticket, after the exchange, on every
//     path; read a reply frame (Reply) before it.
//   - Buf and Frame alias shared memory another process writes: copy what
//     must outlive the exchange.
package arena
