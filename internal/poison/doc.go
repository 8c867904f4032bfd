// Package poison remembers requests that crashed the worker serving them
// (or made its model run outlive max_run_time: a strike like a crash) and
// refuses them once they have done so often enough: a "poison pill" a
// retrying client would otherwise send again and again, restarting the
// worker and failing every other request it holds each time.
//
// Invariants:
//
//   - A Quarantine holds at most Max entries, each a seeded 64-bit hash of
//     what its caller adds through a Hasher (the front: the model's
//     identity and the decoded tensors, v2.WriteRequestKey, so neither
//     encoding, route form nor requested outputs change the key). Full, it
//     drops the entry touched least recently.
//   - At threshold crashes (Crashed) within ttl a body is quarantined until
//     ttl after its last crash (Blocked).
//   - A body struck below the threshold is a suspect (Look): the caller runs
//     it alone (SoloRun) so its next strike is not shared by batchmates;
//     Acquit clears a suspect whose solo run was served, once per window.
//   - Hashing is paid only on a crash and, for an incoming request, while
//     its model has an entry (Watching): never in a healthy server.
//   - Safe for concurrent use; see Quarantine for the locking.
//
// Thresholds, metrics and what clients get: docs/model-isolation.md
// ("Poison requests").
package poison
