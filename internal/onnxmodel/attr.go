package onnxmodel

// Attr is a node attribute (onnx AttributeProto). Build one with AttrInt,
// AttrInts or AttrFloat.
type Attr struct {
	name string
	kind int32 // onnx AttributeProto.AttributeType
	i    int64
	f    float32
	ints []int64
}

// onnx AttributeProto.AttributeType values.
const (
	attrFloat = 1
	attrInt   = 2
	attrInts  = 7
)

// AttrInt is an INT attribute, e.g. AttrInt("transB", 1).
func AttrInt(name string, v int64) Attr {
	return Attr{name: name, kind: attrInt, i: v}
}

// AttrInts is an INTS attribute, e.g. AttrInts("kernel_shape", 3, 3).
func AttrInts(name string, v ...int64) Attr {
	return Attr{name: name, kind: attrInts, ints: v}
}

// AttrFloat is a FLOAT attribute, e.g. AttrFloat("alpha", 1).
func AttrFloat(name string, v float32) Attr {
	return Attr{name: name, kind: attrFloat, f: v}
}
