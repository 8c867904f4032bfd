package v2

import "github.com/supervisor-dev/supervisor/internal/tensor"

// modelVersion is the version of a model of one file (versions.go).
const modelVersion = "1"

// AppendModelMetadata appends the V2 model metadata response:
// {"name","versions":["1"],"platform","inputs":[{"name","datatype","shape"}],"outputs":[...]},
// with "parameters":{"model_identity":"sha256:<hex>"} when the model
// file's content identity is known (md.Identity): which weights answer,
// whatever the file's name or times. Dynamic dimensions are written as
// -1.
//
// md.Name is the served name (versions.go): "name" is the model's name,
// "versions" the one version it names.
func AppendModelMetadata(dst []byte, md *tensor.Metadata) []byte {
	_, version := SplitServedName(md.Name)
	return AppendModelMetadataVersions(dst, md, []string{version})
}

// AppendModelMetadataVersions is AppendModelMetadata listing versions in
// "versions": Triton lists every ready version of a model asked without
// a version, and the one asked for otherwise.
func AppendModelMetadataVersions(dst []byte, md *tensor.Metadata, versions []string) []byte {
	name, _ := SplitServedName(md.Name)
	dst = append(dst, `{"name":`...)
	dst = appendString(dst, name)
	dst = append(dst, `,"versions":[`...)
	for i, v := range versions {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, v)
	}
	dst = append(dst, `],"platform":`...)
	dst = appendString(dst, md.Platform)
	dst = append(dst, `,"inputs":`...)
	dst = appendSpecs(dst, md.Inputs)
	dst = append(dst, `,"outputs":`...)
	dst = appendSpecs(dst, md.Outputs)
	if md.Identity != "" {
		dst = append(dst, `,"parameters":{"model_identity":`...)
		dst = appendString(dst, md.Identity)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// CUDASharedMemoryUnsupported answers Triton's CUDA shared memory
// extension (HTTP /v2/cudasharedmemory/..., 400; gRPC CudaSharedMemory*
// RPCs, UNIMPLEMENTED): not among Extensions.
const CUDASharedMemoryUnsupported = "CUDA shared memory is not supported by this server (cuda_shared_memory is not among the extensions GET /v2 lists): send the tensors in the request"

// RegionNotRead refuses a request whose shared_memory_region parameters
// reach a worker: the master reads and writes regions (supervisor/sysshm)
// only for a request whose JSON it can read, one without
// Content-Encoding; ignoring them would answer an output the client
// never reads.
const RegionNotRead = "parameters.shared_memory_region is read by the server only in an infer request without Content-Encoding: send a request that names shared memory regions uncompressed"

// Extensions are the Triton protocol extensions the server implements,
// under Triton's names, as GET /v2 lists them; each one listed works:
//
//   - binary_tensor_data: Inference-Header-Content-Length bodies and
//     binary_data outputs;
//   - classification: parameters.classification on a requested output;
//   - logging: GET and POST /v2/logging (the master's; the log level at
//     run time, supervisor/logsettings);
//   - model_configuration: GET /v2/models/{m}[/versions/{v}]/config;
//   - model_repository: POST /v2/repository/index and
//     /v2/repository/models/{m}/load|unload (the master's; with
//     model_control: explicit for load and unload);
//   - schedule_policy: the priority and timeout request parameters;
//   - statistics: GET /v2/models[/{m}[/versions/{v}]]/stats;
//   - system_shared_memory: /v2/systemsharedmemory/... and the
//     shared_memory_* parameters of infer inputs and outputs (the
//     master's, supervisor/sysshm).
//
// trace (GET and POST /v2/trace/setting, the master's; OpenTelemetry
// spans, internal/tracing) is listed only while tracing is configured:
// the caller passes it as more.
//
// Not listed because not built: sequence, parameters,
// cuda_shared_memory.
var Extensions = []string{"binary_tensor_data", "classification", "logging", "model_configuration", "model_repository", "schedule_policy", "statistics", "system_shared_memory"}

// AppendServerMetadata appends the V2 server metadata response, listing
// Extensions and then more (those the server's config turns on).
func AppendServerMetadata(dst []byte, name, version string, more ...string) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendString(dst, name)
	dst = append(dst, `,"version":`...)
	dst = appendString(dst, version)
	dst = append(dst, `,"extensions":[`...)
	for i, e := range Extensions {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, e)
	}
	for _, e := range more {
		dst = append(dst, ',')
		dst = appendString(dst, e)
	}
	return append(dst, "]}"...)
}

// AppendError appends the V2 error body {"error":"msg"}.
func AppendError(dst []byte, msg string) []byte {
	dst = append(dst, `{"error":`...)
	dst = appendString(dst, msg)
	return append(dst, '}')
}
