// Package answercost is what an answer holds in memory while a prep
// worker writes it, for the answers lane of its decode gate: Expected,
// from the outputs a model declares, before the infer worker is asked;
// Chunks, the same for an image request's chunks; Of, from the outputs
// that came back, before they are encoded.
//
// The invariants:
//
//   - Of is at least the outputs and the longest answer written from
//     them (binary: their bytes; JSON: the longest text of each element).
//   - Expected is at least Of for outputs of the declared sizes; an output
//     whose size the declaration leaves open counts nothing until it
//     comes back.
//   - The sums saturate at Ceiling, never wrap: the rows are the client's
//     word.
package answercost
