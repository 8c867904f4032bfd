// Package respcache is the response cache's local backend: one shared-memory
// segment per model, created by the master in /dev/shm and mapped by every
// prep worker, so that a hit does not depend on which prep worker the load
// balancer picked.
//
// # Layout
//
// A segment is a header (magic, sizes, the write head, the hit and miss
// counters), an index of 16-byte slots and a ring of max_bytes. An entry is
// a record appended to the ring: its 32-byte key, its expiry, its length, a
// SHA-256 of all three and the payload, then the payload. The index maps a
// key to the ring position of its newest record: the key's first 8 bytes
// pick a bucket of 4 slots, each holding a tag (those 8 bytes) and a
// position.
//
// # Eviction
//
// The ring is the eviction policy: a log-structured FIFO where a writer
// claims the next len(record) bytes by compare-and-swap on the head (a
// 64-bit logical position that only grows), so a new record overwrites the
// oldest ones. The bytes held are the ring's size, max_bytes, and never
// more, whatever the entries' sizes; no entry is larger than max_bytes/16
// (Put refuses it). A hit on an entry in the oldest quarter of the ring
// appends it again (a second chance, as CLOCK gives), so a hot entry is not
// evicted by a stream of one-off requests; of concurrent hits, only the
// one that marks the entry's index slot first appends it. An index slot whose bucket is
// full takes the place of the oldest record of the bucket.
//
// # Concurrency and crashes
//
// There is no lock, so a process that dies mid-write leaves nothing held.
// A writer owns its claimed bytes until the ring wraps onto them, and
// publishes the record's position in the index only after writing it. A
// reader copies the record out, then checks (1) the head has not moved more
// than the ring's size past the record (no writer can have claimed its
// bytes since), (2) the key in the record is the key it looks up, (3) the
// checksum matches and (4) the expiry has not passed. A record that fails
// any of these is a miss: a torn, overwritten or half-written entry (a
// writer that died, or one that stalled until the ring lapped it and then
// wrote over a newer record) is never returned. The checksum is SHA-256,
// so a torn record that passes it would be a SHA-256 collision.
//
// # Keys
//
// A key is SHA-256 (Key) of everything that changes an answer: the model's
// name and processing config, every input (name, datatype, shape, bytes),
// the requested outputs and their classification, all hashed once, then
// hashed again with the content identity of the model file that computed
// the answer (internal/modelid: the SHA-256 of its bytes, sent by the
// infer worker with each answer; worker/prep's cache.go says why not the
// one the prep worker believes). For an image model the inputs are the image bytes as
// sent, hashed before they are decoded (worker/prep's imageKey), so a hit
// costs no decoding. Fields are length-prefixed, so no two different requests
// serialise alike; two requests then share a key only through a SHA-256
// collision (2^-128 for a birthday bound), far below the hardware's error
// rate, which is why the key bytes themselves are the only comparison.
//
// # Reloads and upgrades
//
// The master keeps a model's segment across reloads while its max_bytes is
// unchanged; answers of a model file with other contents or changed
// processing settings stop matching because both are part of the key, and age out
// of the ring. A changed max_bytes makes a new, empty segment. Segments are
// per master (named after its pid): a new master after an upgrade starts
// with empty caches, and removes those of dead masters.
package respcache
