package v2

import "github.com/supervisor-dev/supervisor/internal/tensor"

// modelVersion is the only version a model has here: one file, one version.
const modelVersion = "1"

// AppendModelMetadata appends the V2 model metadata response:
// {"name","versions":["1"],"platform","inputs":[{"name","datatype","shape"}],"outputs":[...]}.
// Dynamic dimensions are written as -1.
func AppendModelMetadata(dst []byte, md *tensor.Metadata) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendString(dst, md.Name)
	dst = append(dst, `,"versions":["`+modelVersion+`"],"platform":`...)
	dst = appendString(dst, md.Platform)
	dst = append(dst, `,"inputs":`...)
	dst = appendSpecs(dst, md.Inputs)
	dst = append(dst, `,"outputs":`...)
	dst = appendSpecs(dst, md.Outputs)
	return append(dst, '}')
}

// AppendServerMetadata appends the V2 server metadata response. It lists
// the extensions implemented: binary_tensor_data (this codec) and
// model_repository (the master's repository routes).
func AppendServerMetadata(dst []byte, name, version string) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendString(dst, name)
	dst = append(dst, `,"version":`...)
	dst = appendString(dst, version)
	return append(dst, `,"extensions":["binary_tensor_data","model_repository"]}`...)
}

// AppendError appends the V2 error body {"error":"msg"}.
func AppendError(dst []byte, msg string) []byte {
	dst = append(dst, `{"error":`...)
	dst = appendString(dst, msg)
	return append(dst, '}')
}
