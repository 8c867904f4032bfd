package grpcfront

import (
	"encoding/json"
	"math"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// The JSON header of the binary-extension request an RPC becomes.
type (
	requestJSON struct {
		ID         string         `json:"id,omitempty"`
		Parameters map[string]any `json:"parameters"`
		Inputs     []inputJSON    `json:"inputs"`
		Outputs    []outputJSON   `json:"outputs,omitempty"`
	}
	inputJSON struct {
		Name       string         `json:"name"`
		Datatype   string         `json:"datatype"`
		Shape      []int64        `json:"shape"`
		Parameters map[string]any `json:"parameters"`
	}
	outputJSON struct {
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters"`
	}
)

// encodeInferRequest turns r into a binary-extension body: the JSON
// header, then each input's bytes in input order (binary_data_size says
// how many). Every output is asked for as binary data. The parameters the
// binary extension owns (binary_data_size, binary_data, binary_data_output)
// are set here; the client's values for them are dropped.
func encodeInferRequest(r *pb.ModelInferRequest) (body []byte, headerLen int, err error) {
	data, err := inputData(r)
	if err != nil {
		return nil, 0, err
	}
	req := requestJSON{ID: r.GetId(), Parameters: parameters(r.GetParameters(), "binary_data_output")}
	req.Parameters["binary_data_output"] = true
	total := 0
	for i, in := range r.GetInputs() {
		shape := in.GetShape()
		if shape == nil {
			shape = []int64{}
		}
		p := parameters(in.GetParameters(), "binary_data_size")
		p["binary_data_size"] = len(data[i])
		req.Inputs = append(req.Inputs, inputJSON{Name: in.GetName(), Datatype: in.GetDatatype(), Shape: shape, Parameters: p})
		total += len(data[i])
	}
	for _, out := range r.GetOutputs() {
		p := parameters(out.GetParameters(), "binary_data")
		p["binary_data"] = true
		req.Outputs = append(req.Outputs, outputJSON{Name: out.GetName(), Parameters: p})
	}
	header, err := json.Marshal(&req)
	if err != nil {
		return nil, 0, status.Errorf(codes.InvalidArgument, "the request's parameters cannot be sent: %v", err)
	}
	body = make([]byte, 0, len(header)+total)
	body = append(body, header...)
	for _, d := range data {
		body = append(body, d...)
	}
	return body, len(header), nil
}

// inputData is each input's bytes: raw_input_contents as sent (one per
// input, and then no input may have contents, as Triton requires), or
// each input's typed contents packed.
func inputData(r *pb.ModelInferRequest) ([][]byte, error) {
	ins := r.GetInputs()
	if raw := r.GetRawInputContents(); len(raw) > 0 {
		if len(raw) != len(ins) {
			return nil, status.Errorf(codes.InvalidArgument, "raw_input_contents has %d entries for %d inputs; send one per input, in input order", len(raw), len(ins))
		}
		for _, in := range ins {
			if in.GetContents() != nil {
				return nil, status.Errorf(codes.InvalidArgument, "input %q has contents while raw_input_contents is used; send every input one way", in.GetName())
			}
		}
		return raw, nil
	}
	data := make([][]byte, len(ins))
	for i, in := range ins {
		b, err := pack(in.GetDatatype(), in.GetContents())
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "input %q: %v", in.GetName(), err)
		}
		data[i] = b
	}
	return data, nil
}

// parameters turns gRPC parameters into JSON values, leaving out drop.
func parameters(ps map[string]*pb.InferParameter, drop string) map[string]any {
	out := make(map[string]any, len(ps)+1)
	for k, p := range ps {
		if k == drop {
			continue
		}
		switch v := p.GetParameterChoice().(type) {
		case *pb.InferParameter_BoolParam:
			out[k] = v.BoolParam
		case *pb.InferParameter_Int64Param:
			out[k] = v.Int64Param
		case *pb.InferParameter_StringParam:
			out[k] = v.StringParam
		case *pb.InferParameter_DoubleParam:
			if !math.IsNaN(v.DoubleParam) && !math.IsInf(v.DoubleParam, 0) {
				out[k] = v.DoubleParam
			}
		case *pb.InferParameter_Uint64Param:
			out[k] = v.Uint64Param
		}
	}
	return out
}
