// Package inferencepb is the Go code generated from grpc_service.proto and
// model_config.proto: the messages and the GRPCInferenceService of the
// KServe V2 gRPC protocol as Triton defines it, and the ModelConfig its
// ModelConfig RPC returns, for the subset supervisor serves.
//
// The .proto files, not this package, are the contract: their package, service,
// message and field names, numbers, types and labels are Triton's, so
// that clients generated from Triton's own grpc_service.proto
// (tritonclient.grpc, perf_analyzer, KServe's clients) speak to
// supervisor unchanged. TestDescriptorMatchesTriton holds them to the
// copies of Triton's files in ../shared/proto/triton. The package is internal
// because nothing outside this module should depend on its Go API; other
// programs generate their own code from either .proto.
//
// The generated files are committed; `make proto` regenerates them with
// Debian's protoc and the protoc-gen-go and protoc-gen-go-grpc versions
// pinned in scripts/proto. Do not edit them by hand.
package inferencepb
