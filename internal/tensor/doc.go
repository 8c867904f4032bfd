// Package tensor holds the typed tensor every stage of the pipeline passes on:
// a name, a KServe V2 datatype, a shape and the raw little-endian, row-major
// bytes. It also defines model metadata (the inputs and outputs a model
// declares, with -1 for a dynamic dimension) and the compact binary framing
// prep workers and infer workers exchange over their Unix sockets.
//
// Data is always raw bytes so that a tensor crosses process boundaries with a
// single copy and no re-serialisation; the V2 JSON codec and ONNX Runtime both
// read and write this form directly.
package tensor
