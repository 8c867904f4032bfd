package onnxmodel

import (
	"errors"
	"fmt"
	"slices"

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

// DivisorInputs returns the graph inputs used directly as the divisor (the
// second operand) of a Div or Mod node of the main graph. When such an
// input is an integer tensor, a zero in it makes ONNX Runtime divide by
// zero in C++: SIGFPE, the process dies. The infer worker refuses those
// requests instead (a divisor computed inside the graph cannot be checked
// this way).
func DivisorInputs(model []byte) ([]string, error) {
	var inputs, divisors []string
	err := eachField(model, func(num protowire.Number, graph []byte) error {
		if num != 7 { // ModelProto.graph
			return nil
		}
		return eachField(graph, func(num protowire.Number, b []byte) error {
			switch num {
			case 11: // GraphProto.input (ValueInfoProto)
				return eachField(b, func(num protowire.Number, name []byte) error {
					if num == 1 { // ValueInfoProto.name
						inputs = append(inputs, string(name))
					}
					return nil
				})
			case 1: // GraphProto.node
				d, ok, err := nodeDivisor(b)
				if ok {
					divisors = append(divisors, d)
				}
				return err
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range divisors {
		if slices.Contains(inputs, d) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// nodeDivisor returns the second input of a Div or Mod node.
func nodeDivisor(node []byte) (string, bool, error) {
	var op string
	var ins []string
	err := eachField(node, func(num protowire.Number, b []byte) error {
		switch num {
		case 1: // NodeProto.input
			ins = append(ins, string(b))
		case 4: // NodeProto.op_type
			op = string(b)
		}
		return nil
	})
	if err != nil || (op != "Div" && op != "Mod") || len(ins) < 2 {
		return "", false, err
	}
	return ins[1], true, nil
}
