// Package respcache is the response cache's local backend: one
// shared-memory segment per model (/dev/shm, named after the master's pid),
// created by the master and mapped by every prep worker, so a hit does not
// depend on which prep worker took the request. Get and Put take a Key
// (KeyBuilder: SHA-256 of everything that changes an answer, including the
// content identity of the model file that computed it); the ring holds at
// most max_bytes.
//
// Invariants:
//
//   - A torn, overwritten, expired or half-written entry is a miss, never a
//     wrong answer: a reader checks the ring head, the key, a SHA-256 of the
//     record and its expiry after copying it out (entry.go).
//   - No lock: a process that dies mid-write leaves nothing held.
//   - The bytes held are max_bytes, whatever the entries; an entry larger
//     than max_bytes/16 is refused. Eviction is a FIFO ring with a second
//     chance for entries hit in its oldest quarter.
//   - Keys compare by their bytes only: requests that differ serialise
//     differently (length-prefixed fields), so they share a key only
//     through a SHA-256 collision (key.go).
//   - A segment outlives reloads while max_bytes is unchanged (a changed
//     file or setting changes every key); a new master starts empty and
//     removes dead masters' segments.
//
// The layout is in segment.go; docs/response-cache.md is the operator's
// view.
package respcache
