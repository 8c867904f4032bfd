// Package conformance runs the ONNX backend node tests (Debian's
// libonnx-testdata: one directory per test with model.onnx and
// test_data_set_0/{input,output}_N.pb) against a running supervisor: which
// models load and serve, why the others do not, and which answer their
// test data correctly.
//
// It reads ONNX's TensorProto with protowire (no generated code), builds V2
// requests with Triton's binary tensor extension, so every element type
// travels bit-exact, and compares outputs with the backend tests'
// tolerance (rtol 1e-3, atol 1e-7; NaN equals NaN).
//
// cmd/conformance is the driver (`make conformance`); a bounded sample runs
// in the end-to-end tests.
package conformance
