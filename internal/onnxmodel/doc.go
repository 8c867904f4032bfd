// Package onnxmodel writes ONNX models from Go, with no Python and no
// generated protobuf code: a Graph collects inputs, initializers, nodes and
// outputs, and Model.Marshal encodes the few onnx.proto messages ONNX Runtime
// needs (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto with
// raw_data, ValueInfoProto and OperatorSetIdProto) with protowire.
//
// The package also builds the project's own models (Default, MLP, Types,
// Fixed) so that tests, benchmarks and `go run ./cmd/genmodels` serve real
// ONNX files without checking binaries into the repository. Building is
// deterministic: the same seed gives byte-identical files, so a model on
// disk can be regenerated and compared at any time.
//
// OpTypes reads the other way: the operator types a model file uses, for
// the infer worker's warm-up policy. ModByZero, ModByInput and Scalar are
// test models (a graph that SIGFPEs ONNX Runtime, one that divides by an
// input, rank-0 inputs and outputs); WriteAll does not write them.
//
// The builder checks only what it must to encode (names present, datatypes
// supported); whether a graph is valid ONNX is left to ONNX Runtime, which
// reports it when the model is loaded.
package onnxmodel
