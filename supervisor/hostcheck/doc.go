// Package hostcheck checks the host against a config and its placement
// plan, for `supervisor check`: whether the ONNX Runtime library the
// workers will load has the execution providers each planned GPU worker
// needs (Providers). It reads the host, never the config file: the
// config is parsed and planned before (supervisor/config, affinity), and
// nothing here changes either.
//
// The verdict is the library's, not the device's: only a session proves
// that the CUDA, cuDNN and TensorRT libraries load, so a GPU worker this
// package passes may still fail at boot, but one it fails cannot run.
//
// It imports affinity, internal/ort and supervisor/config; never the
// master (supervisor/), so check runs without starting anything.
package hostcheck
