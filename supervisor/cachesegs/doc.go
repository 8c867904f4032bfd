// Package cachesegs is the master's side of the response cache: one
// shared-memory segment (internal/respcache) per model with
// response_cache enabled, created by the master and mapped by every prep
// worker. Set.Sync makes the segments match a config and returns their
// paths, which the prep workers' specs carry.
//
// The invariants:
//
//   - A reload keeps a model's segment unless its max_bytes changed; a new
//     size is a new path, so the prep workers are replaced onto it.
//   - A segment that cannot be made (or given to the workers' user) is
//     logged and left out: its model serves uncached, nothing fails.
//   - Segments of models that no longer cache are removed, and every
//     segment is removed when the master stops (Set.Remove).
package cachesegs
