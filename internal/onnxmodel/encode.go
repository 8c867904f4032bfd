package onnxmodel

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// The encoders below write onnx.proto (proto2) messages field by field. Field
// numbers are quoted from onnx.proto next to each call. Repeated scalars are
// written unpacked, the proto2 default; every protobuf parser accepts it.

func (g *Graph) marshal() ([]byte, error) {
	var b []byte
	for i := range g.nodes {
		n, err := g.nodes[i].marshal()
		if err != nil {
			return nil, err
		}
		b = appendMessage(b, 1, n) // node
	}
	b = appendString(b, 2, g.name) // name
	for i := range g.inits {
		t, err := g.inits[i].marshal()
		if err != nil {
			return nil, err
		}
		b = appendMessage(b, 5, t) // initializer
	}
	for _, field := range []struct {
		num protowire.Number
		vis []valueInfo
	}{{11, g.inputs}, {12, g.outputs}} { // input, output
		for i := range field.vis {
			v, err := field.vis[i].marshal()
			if err != nil {
				return nil, err
			}
			b = appendMessage(b, field.num, v)
		}
	}
	return b, nil
}

func (n *node) marshal() ([]byte, error) {
	if n.op == "" {
		return nil, fmt.Errorf("node %q has no operator", n.name)
	}
	var b []byte
	for _, in := range n.inputs {
		b = appendString(b, 1, in) // input
	}
	for _, out := range n.outputs {
		b = appendString(b, 2, out) // output
	}
	b = appendString(b, 3, n.name) // name
	b = appendString(b, 4, n.op)   // op_type
	for _, a := range n.attrs {
		if a.name == "" || a.kind == 0 {
			return nil, fmt.Errorf("node %q has an attribute without a name or value", n.name)
		}
		b = appendMessage(b, 5, a.marshal()) // attribute
	}
	return b, nil
}

func (a *Attr) marshal() []byte {
	var b []byte
	b = appendString(b, 1, a.name) // name
	switch a.kind {
	case attrFloat:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type) // f
		b = protowire.AppendFixed32(b, math.Float32bits(a.f))
	case attrInt:
		b = appendInt(b, 3, a.i) // i
	case attrInts:
		for _, v := range a.ints {
			b = appendInt(b, 8, v) // ints
		}
	}
	return appendInt(b, 20, int64(a.kind)) // type
}

func (t *initializer) marshal() ([]byte, error) {
	et := elemType(t.dtype)
	if et == 0 || t.dtype == tensor.Bytes {
		// STRING initializers need string_data, not raw_data: not written.
		return nil, fmt.Errorf("initializer %q: unsupported datatype %s", t.name, t.dtype)
	}
	n := int64(1)
	for _, d := range t.shape {
		n *= d
	}
	if want := n * int64(t.dtype.Size()); int64(len(t.raw)) != want {
		return nil, fmt.Errorf("initializer %q: shape %v of %s needs %d bytes, got %d",
			t.name, t.shape, t.dtype, want, len(t.raw))
	}
	var b []byte
	for _, d := range t.shape {
		b = appendInt(b, 1, d) // dims
	}
	b = appendInt(b, 2, int64(et)) // data_type
	b = appendString(b, 8, t.name) // name
	b = protowire.AppendTag(b, 9, protowire.BytesType)
	return protowire.AppendBytes(b, t.raw), nil // raw_data
}

func (v *valueInfo) marshal() ([]byte, error) {
	et := elemType(v.dtype)
	if v.name == "" || et == 0 {
		return nil, fmt.Errorf("graph input or output %q: missing name or unsupported datatype %s", v.name, v.dtype)
	}
	var shape []byte
	for _, d := range v.dims {
		var dim []byte
		if d.Param != "" {
			dim = appendString(dim, 2, d.Param) // dim_param
		} else {
			dim = appendInt(dim, 1, d.Size) // dim_value
		}
		shape = appendMessage(shape, 1, dim) // TensorShapeProto.dim
	}
	var tt []byte
	tt = appendInt(tt, 1, int64(et))     // TypeProto.Tensor.elem_type
	tt = appendMessage(tt, 2, shape)     // TypeProto.Tensor.shape
	typ := appendMessage(nil, 1, tt)     // TypeProto.tensor_type
	b := appendString(nil, 1, v.name)    // ValueInfoProto.name
	return appendMessage(b, 2, typ), nil // ValueInfoProto.type
}

func appendInt(b []byte, num protowire.Number, v int64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}
