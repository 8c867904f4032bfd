// Package inferquery asks one infer worker, over its Unix socket, what
// it serves (Metadata: GET /metadata) and how it has served (Stats: GET
// /stats of every infer worker at once, summed per model): a prep
// worker's questions to the infer workers other than inference.
//
// The invariants:
//
//   - Every question is bounded in time (the caller's bound for
//     metadata: MetadataTimeout, or longer for a prep worker's boot; 5 s
//     for statistics); a worker that does not answer is an error naming
//     its socket, never a wait.
//   - Stats asks the workers in parallel and sums what those that
//     answered said; the error is one that did not.
package inferquery
