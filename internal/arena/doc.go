// Package arena is the shared-memory tensor handoff between a prep worker
// and the infer workers: a sealed memfd holding a ring of fixed-size
// slots, owned by the prep worker. It writes a request's frame into a
// slot once and sends only a descriptor (Ref and Ticket); the infer
// worker reads the inputs in place and writes its reply into the same slot.
//
// Invariants:
//
//   - An arena is a memfd sealed (sealedAgainst) before anyone else sees
//     it, so no mapping of it can fault with SIGBUS; Open refuses anything
//     unsealed, and checks the header (sizes, token) against fstat and
//     the Ref before it maps.
//   - Each slot's state word (word.go: state, claimer pid, sequence) moves
//     by CAS only; the sequence, bumped on every Acquire, goes with the
//     Ticket, so a stale descriptor can never claim the slot.
//   - An infer worker touches a slot only once it has claimed it, and
//     marks it Done whatever the outcome.
//   - A slot comes back only when nobody will touch it again: revoked
//     before a claim, Done, or its claimer dead (liveness.go). A live
//     claimer keeps it (the master kills a hung one at heartbeat_timeout);
//     only when liveness cannot be decided does the caller's backstop free it.
//   - Acquire takes no slot past the request's deadline (ErrExpired) and
//     waits at most until it (ErrFull).
//
// Pitfalls for the caller:
//
//   - Call Settle exactly once per Ticket, after the exchange, on every
//     path; read a reply frame (Reply) before it.
//   - Buf and Frame alias shared memory another process writes: copy what
//     must outlive the exchange.
package arena
