// Package workerspec is what a worker's spec (worker.Spec) takes from the
// config: its placement (cpuset, memory policy, device, execution
// provider, threads: Place, Placed), a model's batching (Batching), and
// the prep workers' per-model processing (image preprocess,
// classification, response cache: Processing).
//
// The invariants:
//
//   - Pure functions of the config and the plan: the same config and plan
//     give the same specs, so the master can compare a position's spec
//     with the one a reload would give it.
//   - Every batching key is carried over; a model without batching gets
//     config.DefaultBatching's.
//   - A prep worker is told only of the models it processes (an image
//     preprocess, a postprocess or a response cache); a cache's identity
//     holds the model's name and its processing settings, so a change of
//     either never matches an old answer.
package workerspec
