package ort

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// symbolicDims decodes just enough of an ONNX ModelProto to name the
// dimensions of its graph inputs and outputs: value name → one dim_param per
// axis, "" where the axis has a fixed size or no name. ONNX Runtime reports
// every such axis as -1; onnxruntime_go does not expose the names.
//
// Field numbers are onnx.proto's: ModelProto.graph 7; GraphProto.input 11,
// output 12; ValueInfoProto.name 1, type 2; TypeProto.tensor_type 1;
// TypeProto.Tensor.shape 2; TensorShapeProto.dim 1; Dimension.dim_param 2.
func symbolicDims(model []byte) (map[string][]string, error) {
	dims := make(map[string][]string)
	err := eachBytesField(model, func(num protowire.Number, graph []byte) error {
		if num != 7 {
			return nil
		}
		return eachBytesField(graph, func(num protowire.Number, vi []byte) error {
			if num != 11 && num != 12 {
				return nil
			}
			name, params, err := valueInfoDims(vi)
			if err == nil && name != "" {
				dims[name] = params
			}
			return err
		})
	})
	return dims, err
}

// valueInfoDims decodes a ValueInfoProto's name and dim_params.
func valueInfoDims(vi []byte) (string, []string, error) {
	var name string
	var params []string
	err := eachBytesField(vi, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			name = string(v)
			return nil
		case 2:
			return nested(v, []protowire.Number{1, 2}, func(shape []byte) error {
				return eachBytesField(shape, func(num protowire.Number, dim []byte) error {
					if num != 1 {
						return nil
					}
					param := ""
					err := eachBytesField(dim, func(num protowire.Number, v []byte) error {
						if num == 2 {
							param = string(v)
						}
						return nil
					})
					params = append(params, param)
					return err
				})
			})
		}
		return nil
	})
	return name, params, err
}

// nested calls fn with each message reached by following the path of
// length-delimited field numbers from msg.
func nested(msg []byte, path []protowire.Number, fn func([]byte) error) error {
	if len(path) == 0 {
		return fn(msg)
	}
	return eachBytesField(msg, func(num protowire.Number, v []byte) error {
		if num != path[0] {
			return nil
		}
		return nested(v, path[1:], fn)
	})
}

// eachBytesField calls fn for every length-delimited field of msg, skipping
// the others.
func eachBytesField(msg []byte, fn func(protowire.Number, []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("malformed protobuf: %w", protowire.ParseError(n))
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return fmt.Errorf("malformed protobuf field %d: %w", num, protowire.ParseError(n))
			}
			msg = msg[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(msg)
		if n < 0 {
			return fmt.Errorf("malformed protobuf field %d: %w", num, protowire.ParseError(n))
		}
		if err := fn(num, v); err != nil {
			return err
		}
		msg = msg[n:]
	}
	return nil
}
