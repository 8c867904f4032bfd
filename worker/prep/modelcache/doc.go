// Package modelcache is a prep worker's response cache for one model: the
// shared-memory segment every prep worker of the host maps
// (internal/respcache), and Redis behind it when configured
// (internal/respredis). Keys are taken after decoding (Key) or, for an
// image model, from the image bytes before decoding (ImageKey); answers
// are stored as output tensors, rendered per request. Cache's comment
// says why.
//
// The invariants:
//
//   - The cache never fails a request: a torn entry, a fault, a Redis
//     failure or a Redis entry that is not tensors is a miss.
//   - An answer is stored under the model identity its infer worker
//     answered with, never under the one this worker was told, and one
//     without an identity is not stored; lookups use the last answer's.
//   - A Redis hit that parses is copied into the local segment; one that
//     does not stays out of it.
//   - Models that name the same Redis share one client.
package modelcache
