// Package modelcheck is what `supervisor check` learns by loading a
// config's models with ONNX Runtime in its own process: which models do
// not load (Load), and whether loading and warming them up is estimated
// to fit boot_timeout (WarmupWarnings).
//
// The invariants:
//
//   - A model that does not load is an error at its path's line; the
//     others are still checked, and all are reported at once.
//   - Load never warms a model up: a warm-up may kill the process, which
//     an infer worker survives and `supervisor check` would not.
//   - WarmupWarnings only warns: an estimate never refuses a config.
package modelcheck
