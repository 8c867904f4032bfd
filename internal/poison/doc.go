// Package poison remembers request bodies that crashed the worker serving
// them (or made its model run outlive max_run_time: a strike like a
// crash), and refuses them once they have done so often enough: a "poison
// pill" that a retrying client (or a load balancer) would otherwise send
// again and again, restarting the worker and failing every other request
// it holds each time.
//
// The model:
//   - A Quarantine holds at most Max entries, each a 64-bit seeded hash
//     of the request fields its caller adds through a Hasher (the front
//     adds the model's name and the decoded tensors, v2.WriteRequestKey,
//     so that neither the encoding a client chooses, nor the route's
//     form, nor the outputs it asks for change the key; KeyOf takes a
//     model and a body as it is) plus the bytes hashed, the model it was
//     sent to, its crash count and when the entry ends. Full, it drops
//     the entry that was touched least recently.
//   - Crashed counts one crash of a body; at threshold crashes within ttl
//     the body is quarantined until ttl after its last crash. Blocked
//     tells whether a body is quarantined and for how much longer; Look
//     also tells a suspect: a body struck within its window but below
//     the threshold, which the caller runs alone (SoloRun counts it) so
//     that its next strike is not shared by innocent batchmates. Acquit
//     clears a suspect whose solo run was served, once per window, so
//     that a body many requests share, struck once beside a poison one,
//     is batched again.
//   - Hashing is paid only when needed: on a crash, and, for an incoming
//     request, only while its model has an entry (Watching), which is
//     never in a healthy server.
//
// A false positive (another body with the same hash and length) refuses
// one innocent request until the entry ends. With a random per-process
// seed (hash/maphash) a client cannot aim for a collision, and the odds of
// one by chance are about entries/2^64: negligible next to the crash the
// quarantine prevents.
//
// A Quarantine is safe for concurrent use; its state is behind one mutex,
// held for map operations only (hashing happens outside it), and an empty
// quarantine answers Watching from an atomic count, without it.
package poison
