package onnxmodel

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// errTruncated is returned by OpTypes for a model file that is not valid
// protobuf.
var errTruncated = errors.New("not a valid ONNX model: bad protobuf encoding")

// OpTypes returns the operator types (NodeProto.op_type) used anywhere in
// an encoded ModelProto, subgraphs of If, Loop and Scan included. It reads
// only the fields on the way (ModelProto.graph = 7, GraphProto.node = 1,
// NodeProto.op_type = 4, NodeProto.attribute = 5, AttributeProto.g = 6 and
// graphs = 11), so it is cheap enough to run on every model at boot: the
// infer worker uses it to keep its zero warm-up away from integer division.
func OpTypes(model []byte) (map[string]bool, error) {
	ops := map[string]bool{}
	err := eachField(model, func(num protowire.Number, b []byte) error {
		if num == 7 { // ModelProto.graph
			return graphOps(b, ops, 0)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ops, nil
}

// maxGraphDepth bounds subgraph nesting, so a hostile file cannot recurse
// without end.
const maxGraphDepth = 32

func graphOps(graph []byte, ops map[string]bool, depth int) error {
	if depth > maxGraphDepth {
		return fmt.Errorf("not a supported ONNX model: subgraphs nested deeper than %d", maxGraphDepth)
	}
	return eachField(graph, func(num protowire.Number, b []byte) error {
		if num != 1 { // GraphProto.node
			return nil
		}
		return eachField(b, func(num protowire.Number, b []byte) error {
			switch num {
			case 4: // NodeProto.op_type
				ops[string(b)] = true
			case 5: // NodeProto.attribute
				return eachField(b, func(num protowire.Number, b []byte) error {
					if num == 6 || num == 11 { // AttributeProto.g, graphs
						return graphOps(b, ops, depth+1)
					}
					return nil
				})
			}
			return nil
		})
	})
}

// eachField calls fn with the number and payload of every length-delimited
// field of msg, skipping the others.
func eachField(msg []byte, fn func(protowire.Number, []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return errTruncated
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return errTruncated
			}
			msg = msg[n:]
			continue
		}
		b, n := protowire.ConsumeBytes(msg)
		if n < 0 {
			return errTruncated
		}
		msg = msg[n:]
		if err := fn(num, b); err != nil {
			return err
		}
	}
	return nil
}
