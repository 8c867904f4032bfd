package grpcfront

import (
	"math"
	"slices"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	v2 "github.com/supervisor-dev/supervisor/internal/v2"
)

// encodeInferRequest turns r into a binary-extension body: the JSON
// header, then each input's bytes in input order (binary_data_size says
// how many). Every output is asked for as binary data. The parameters the
// binary extension owns (binary_data_size, binary_data, binary_data_output)
// are set here; the client's values for them are dropped.
//
// The header is written by hand, straight into the body's buffer, which
// is then the only copy of the tensors: encoding/json's reflection, its
// maps of parameters and a second buffer were a tenth of the master's
// CPU per RPC (issue 33).
func encodeInferRequest(r *pb.ModelInferRequest) (body []byte, headerLen int, err error) {
	body, headerLen, free, err := encodePooled(r, mem.NopBufferPool{})
	free()
	return body, headerLen, err
}

// encodePooled is encodeInferRequest into a buffer of pool; free hands
// it back (the body is dead from then). A header longer than its
// estimate grows the body out of the pool's buffer, which goes back at
// once.
func encodePooled(r *pb.ModelInferRequest, pool mem.BufferPool) (body []byte, headerLen int, free func(), err error) {
	data, err := inputData(r)
	if err != nil {
		return nil, 0, func() {}, err
	}
	total := 0
	for _, d := range data {
		total += len(d)
	}
	buf := pool.Get(headerEstimate(r) + total)
	b := (*buf)[:0]
	body, headerLen = appendInferRequest(b, r, data)
	if cap(body) != cap(b) { // grown out of buf
		pool.Put(buf)
		return body, headerLen, func() {}, nil
	}
	return body, headerLen, func() { pool.Put(buf) }, nil
}

// appendInferRequest appends r's body, with data its inputs' bytes, to b.
func appendInferRequest(b []byte, r *pb.ModelInferRequest, data [][]byte) (body []byte, headerLen int) {
	b = append(b, '{')
	if id := r.GetId(); id != "" {
		b = append(b, `"id":`...)
		b = v2.AppendString(b, id)
		b = append(b, ',')
	}
	b = append(b, `"parameters":{`...)
	b = appendParameters(b, r.GetParameters(), "binary_data_output")
	b = append(b, `"binary_data_output":true},"inputs":[`...)
	for i, in := range r.GetInputs() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = v2.AppendString(b, in.GetName())
		b = append(b, `,"datatype":`...)
		b = v2.AppendString(b, in.GetDatatype())
		b = append(b, `,"shape":[`...)
		for k, d := range in.GetShape() {
			if k > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, `],"parameters":{`...)
		b = appendParameters(b, in.GetParameters(), "binary_data_size")
		if inRegion(in) {
			// Its bytes are the region's: the master reads them
			// (supervisor/sysshm).
			b = append(b[:len(b)-1], "}}"...)
			continue
		}
		b = append(b, `"binary_data_size":`...)
		b = strconv.AppendInt(b, int64(len(data[i])), 10)
		b = append(b, "}}"...)
	}
	b = append(b, ']')
	if outs := r.GetOutputs(); len(outs) > 0 {
		b = append(b, `,"outputs":[`...)
		for i, out := range outs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = v2.AppendString(b, out.GetName())
			b = append(b, `,"parameters":{`...)
			b = appendParameters(b, out.GetParameters(), "binary_data")
			b = append(b, `"binary_data":true}}`...)
		}
		b = append(b, ']')
	}
	b = append(b, '}')
	headerLen = len(b)
	for _, d := range data {
		b = append(b, d...)
	}
	return b, headerLen
}

// headerEstimate is room enough for most requests' JSON headers, so the
// body is allocated once: the names, plus a fixed share per tensor and
// parameter for the keys and numbers around them.
func headerEstimate(r *pb.ModelInferRequest) int {
	n := 96 + len(r.GetId()) + 48*len(r.GetParameters())
	for _, in := range r.GetInputs() {
		n += 96 + len(in.GetName()) + len(in.GetDatatype()) + 21*len(in.GetShape()) + 48*len(in.GetParameters())
	}
	for _, out := range r.GetOutputs() {
		n += 64 + len(out.GetName()) + 48*len(out.GetParameters())
	}
	return n
}

// appendParameters appends the gRPC parameters ps, but drop, as JSON
// members, each followed by a comma, in key order (the header is the
// same for the same request). A double that is NaN or infinite has no
// JSON value: left out.
func appendParameters(b []byte, ps map[string]*pb.InferParameter, drop string) []byte {
	keys := make([]string, 0, len(ps))
	for k := range ps {
		if k != drop {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		start := len(b)
		b = v2.AppendString(b, k)
		b = append(b, ':')
		switch v := ps[k].GetParameterChoice().(type) {
		case *pb.InferParameter_BoolParam:
			b = strconv.AppendBool(b, v.BoolParam)
		case *pb.InferParameter_Int64Param:
			b = strconv.AppendInt(b, v.Int64Param, 10)
		case *pb.InferParameter_StringParam:
			b = v2.AppendString(b, v.StringParam)
		case *pb.InferParameter_DoubleParam:
			if math.IsNaN(v.DoubleParam) || math.IsInf(v.DoubleParam, 0) {
				b = b[:start]
				continue
			}
			b = strconv.AppendFloat(b, v.DoubleParam, 'g', -1, 64)
		case *pb.InferParameter_Uint64Param:
			b = strconv.AppendUint(b, v.Uint64Param, 10)
		default: // no value
			b = b[:start]
			continue
		}
		b = append(b, ',')
	}
	return b
}

// inRegion reports whether in's bytes are in a system shared memory
// region (its shared_memory_region parameter).
func inRegion(in *pb.ModelInferRequest_InferInputTensor) bool {
	_, ok := in.GetParameters()["shared_memory_region"]
	return ok
}

// inputData is each input's bytes: raw_input_contents as sent (one per
// input not in a shared memory region, in input order, and then no input
// may have contents, as Triton requires), or each input's typed contents
// packed. An input in a region has no bytes here, and may have no
// contents.
func inputData(r *pb.ModelInferRequest) ([][]byte, error) {
	ins := r.GetInputs()
	inline := 0
	for _, in := range ins {
		if !inRegion(in) {
			inline++
		} else if in.GetContents() != nil {
			return nil, status.Errorf(codes.InvalidArgument, "input %q names a shared memory region and has contents; send it one way", in.GetName())
		}
	}
	if raw := r.GetRawInputContents(); len(raw) > 0 {
		if len(raw) != inline {
			return nil, status.Errorf(codes.InvalidArgument, "raw_input_contents has %d entries for %d inputs not in shared memory; send one per input, in input order", len(raw), inline)
		}
		data := make([][]byte, len(ins))
		k := 0
		for i, in := range ins {
			if in.GetContents() != nil {
				return nil, status.Errorf(codes.InvalidArgument, "input %q has contents while raw_input_contents is used; send every input one way", in.GetName())
			}
			if !inRegion(in) {
				data[i] = raw[k]
				k++
			}
		}
		return data, nil
	}
	data := make([][]byte, len(ins))
	for i, in := range ins {
		if inRegion(in) {
			continue
		}
		b, err := pack(in.GetDatatype(), in.GetContents())
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "input %q: %v", in.GetName(), err)
		}
		data[i] = b
	}
	return data, nil
}
