// Package tritonconfig is Triton's model configuration document
// (model_config.proto's ModelConfig, as JSON) for GET
// /v2/models/{m}/config: Build describes a model as the infer workers
// serving it run it, and as clients see it.
//
// The invariants:
//
//   - The JSON is Triton's: proto field names, enums by name, 64-bit
//     integers as numbers, and every field we have an equivalent for
//     present.
//   - It describes the model as it serves now (the workers' reports), not
//     as a config file says.
//   - With max_batch_size > 0, dims leave out the batch dimension and
//     dynamic_batching is present; without, neither.
package tritonconfig
