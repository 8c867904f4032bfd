package grpcfront

import (
	"bytes"
	"encoding/json"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	v2 "github.com/supervisor-dev/supervisor/internal/v2"
)

// decodeInferResponse turns a binary-extension answer into a
// ModelInferResponse: each output's binary_data_size bytes, in order,
// become its raw_output_contents entry (slices of body, not copies).
// Every output was asked for as binary data, so an output without
// binary_data_size is an internal error. The header is read by
// v2.DecodeResponseHeader, not encoding/json (issue 33).
func decodeInferResponse(body, headerLenValue []byte) (*pb.ModelInferResponse, error) {
	headerLen, err := strconv.Atoi(string(headerLenValue))
	if err != nil || headerLen < 0 || headerLen > len(body) {
		return nil, status.Errorf(codes.Internal, "the worker's answer has no valid %s (%q) for its %d bytes", headerLenHeader, headerLenValue, len(body))
	}
	j, err := v2.DecodeResponseHeader(body[:headerLen])
	if err != nil {
		return nil, status.Errorf(codes.Internal, "the worker's answer header is not a V2 infer response: %v", err)
	}
	resp := &pb.ModelInferResponse{ModelName: j.ModelName, ModelVersion: j.ModelVersion, Id: j.ID, Parameters: inferParameters(j.Parameters),
		Outputs: make([]*pb.ModelInferResponse_InferOutputTensor, 0, len(j.Outputs)), RawOutputContents: make([][]byte, 0, len(j.Outputs))}
	rest := body[headerLen:]
	for _, o := range j.Outputs {
		n := o.BinarySize
		if n < 0 && outRegion(o.Parameters) {
			// Written into its shared memory region by the master
			// (supervisor/sysshm): an empty entry keeps the indexes of
			// raw_output_contents those of outputs, as Triton does.
			n = 0
		}
		if n < 0 || n > int64(len(rest)) {
			return nil, status.Errorf(codes.Internal, "output %q: binary_data_size %d (-1: none) does not fit the %d bytes left of the answer", o.Name, n, len(rest))
		}
		shape := o.Shape
		if shape == nil {
			shape = []int64{}
		}
		resp.Outputs = append(resp.Outputs, &pb.ModelInferResponse_InferOutputTensor{Name: o.Name, Datatype: o.Datatype, Shape: shape, Parameters: inferParameters(o.Parameters)})
		resp.RawOutputContents = append(resp.RawOutputContents, rest[:n:n])
		rest = rest[n:]
	}
	return resp, nil
}

// inferParameters turns JSON parameter values into InferParameters: a
// bool, a string, an integer (int64, or uint64 past int64) or another
// number (double). Objects and arrays have no InferParameter: left out.
func inferParameters(ps []v2.Parameter) map[string]*pb.InferParameter {
	if len(ps) == 0 {
		return nil
	}
	out := make(map[string]*pb.InferParameter, len(ps))
	for _, p := range ps {
		if v := inferParameter(p.Value); v != nil {
			out[p.Key] = v
		}
	}
	return out
}

func inferParameter(raw []byte) *pb.InferParameter {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil
	}
	switch v := v.(type) {
	case bool:
		return &pb.InferParameter{ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: v}}
	case string:
		return &pb.InferParameter{ParameterChoice: &pb.InferParameter_StringParam{StringParam: v}}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return &pb.InferParameter{ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: i}}
		}
		if u, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			return &pb.InferParameter{ParameterChoice: &pb.InferParameter_Uint64Param{Uint64Param: u}}
		}
		if f, err := v.Float64(); err == nil {
			return &pb.InferParameter{ParameterChoice: &pb.InferParameter_DoubleParam{DoubleParam: f}}
		}
	}
	return nil
}

// outRegion reports whether an answer's output names the shared memory
// region it was written to.
func outRegion(ps []v2.Parameter) bool {
	for _, p := range ps {
		if p.Key == "shared_memory_region" {
			return true
		}
	}
	return false
}
