package conformance

import (
	"os"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// ONNX 1.12's backend tests store BFLOAT16 test data as numpy uint16
// arrays, so their TensorProtos say UINT16 where the model says BFLOAT16.
// The bits are the bfloat16 values: relabelling is exact.

// asDeclared relabels t as BF16 when it is UINT16 and declared maps its
// name to BF16.
func asDeclared(t *tensor.Tensor, declared map[string]tensor.DType) {
	if t.DType == tensor.Uint16 && declared[t.Name] == tensor.BF16 {
		t.DType = tensor.BF16
	}
}

// specTypes maps each spec's name to its datatype.
func specTypes(specs []tensor.Spec) map[string]tensor.DType {
	m := make(map[string]tensor.DType, len(specs))
	for _, s := range specs {
		m[s.Name] = s.DType
	}
	return m
}

// modelInputTypes reads a model file's graph inputs' element types (for
// warm-up files, written before any server can report metadata). Inputs
// of types the pipeline does not carry, and unreadable files, are left
// out: relabelling is then not attempted. Field numbers are onnx.proto's:
// ModelProto.graph 7, GraphProto.input 11, ValueInfoProto.name 1 and
// type 2, TypeProto.tensor_type 1, TypeProto.Tensor.elem_type 1.
func modelInputTypes(path string) map[string]tensor.DType {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	types := map[string]tensor.DType{}
	for _, graph := range messages(b, 7) {
		for _, vi := range messages(graph, 11) {
			var name string
			if names := messages(vi, 1); len(names) > 0 {
				name = string(names[0])
			}
			for _, tt := range messages(vi, 2) {
				for _, tensorType := range messages(tt, 1) {
					if dt, ok := onnxTypes[varintField(tensorType, 1)]; ok {
						types[name] = dt
					}
				}
			}
		}
	}
	return types
}

// messages returns the values of msg's length-delimited fields numbered
// num.
func messages(msg []byte, num protowire.Number) [][]byte {
	var out [][]byte
	fields(msg, func(n protowire.Number, typ protowire.Type, b []byte, _ uint64) {
		if n == num && typ == protowire.BytesType {
			out = append(out, b)
		}
	})
	return out
}

// varintField returns the last value of msg's varint field num, or 0.
func varintField(msg []byte, num protowire.Number) uint64 {
	var v uint64
	fields(msg, func(n protowire.Number, typ protowire.Type, _ []byte, x uint64) {
		if n == num && typ == protowire.VarintType {
			v = x
		}
	})
	return v
}

// fields calls fn for each field of msg with its number, its type, and its
// value: the bytes of a length-delimited field, the value of a varint. It
// stops at the first malformed field.
func fields(msg []byte, fn func(protowire.Number, protowire.Type, []byte, uint64)) {
	for len(msg) > 0 {
		num, typ, k := protowire.ConsumeTag(msg)
		if k < 0 {
			return
		}
		msg = msg[k:]
		var b []byte
		var v uint64
		switch typ {
		case protowire.BytesType:
			b, k = protowire.ConsumeBytes(msg)
		case protowire.VarintType:
			v, k = protowire.ConsumeVarint(msg)
		default:
			k = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if k < 0 {
			return
		}
		fn(num, typ, b, v)
		msg = msg[k:]
	}
}
