package conformance

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// ErrUnsupported marks a test tensor of a type the server does not carry
// (complex, 8-bit floats...) or stored outside the file.
var ErrUnsupported = errors.New("unsupported test tensor")

var errBadProto = errors.New("bad TensorProto encoding")

// ReadTensor reads an ONNX TensorProto file into a tensor with raw
// little-endian data.
func ReadTensor(path string) (tensor.Tensor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return tensor.Tensor{}, err
	}
	t, err := DecodeTensor(b)
	if err != nil {
		return t, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// onnxTypes maps TensorProto.DataType to the pipeline's types.
var onnxTypes = map[uint64]tensor.DType{
	1: tensor.FP32, 2: tensor.Uint8, 3: tensor.Int8, 4: tensor.Uint16, 5: tensor.Int16,
	6: tensor.Int32, 7: tensor.Int64, 9: tensor.Bool, 10: tensor.FP16, 11: tensor.FP64,
	12: tensor.Uint32, 13: tensor.Uint64, 16: tensor.BF16, 8: tensor.Bytes,
}

// protoTensor is what DecodeTensor collects before it lays the data out.
type protoTensor struct {
	dims     []int64
	dataType uint64
	name     string
	raw      []byte
	hasRaw   bool
	varints  []uint64  // int32_data, int64_data, uint64_data
	floats   []float32 // float_data
	doubles  []float64 // double_data
	strs     [][]byte  // string_data
	external bool
}

// DecodeTensor decodes one TensorProto (onnx.proto field numbers: dims 1,
// data_type 2, float_data 4, int32_data 5, string_data 6, int64_data 7,
// name 8, raw_data 9, double_data 10, uint64_data 11, data_location 14).
func DecodeTensor(b []byte) (tensor.Tensor, error) {
	var p protoTensor
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return tensor.Tensor{}, errBadProto
		}
		b = b[n:]
		if n = p.field(num, typ, b); n < 0 {
			return tensor.Tensor{}, errBadProto
		}
		b = b[n:]
	}
	return p.tensor()
}

// field consumes one field's value and returns its length, or -1.
func (p *protoTensor) field(num protowire.Number, typ protowire.Type, b []byte) int {
	switch {
	case num == 1:
		return consumeInts(b, typ, func(v uint64) { p.dims = append(p.dims, int64(v)) })
	case num == 2 && typ == protowire.VarintType:
		v, n := protowire.ConsumeVarint(b)
		p.dataType = v
		return n
	case num == 4:
		return consumeFixed32(b, typ, func(v uint32) { p.floats = append(p.floats, math.Float32frombits(v)) })
	case num == 5 || num == 7 || num == 11:
		return consumeInts(b, typ, func(v uint64) { p.varints = append(p.varints, v) })
	case num == 6 && typ == protowire.BytesType:
		v, n := protowire.ConsumeBytes(b)
		p.strs = append(p.strs, v)
		return n
	case num == 8 && typ == protowire.BytesType:
		v, n := protowire.ConsumeBytes(b)
		p.name = string(v)
		return n
	case num == 9 && typ == protowire.BytesType:
		v, n := protowire.ConsumeBytes(b)
		p.raw, p.hasRaw = v, true
		return n
	case num == 10:
		return consumeFixed64(b, typ, func(v uint64) { p.doubles = append(p.doubles, math.Float64frombits(v)) })
	case num == 14 && typ == protowire.VarintType:
		v, n := protowire.ConsumeVarint(b)
		p.external = v == 1
		return n
	}
	return protowire.ConsumeFieldValue(num, typ, b)
}

// tensor lays the collected data out as raw little-endian bytes.
func (p *protoTensor) tensor() (tensor.Tensor, error) {
	dt, ok := onnxTypes[p.dataType]
	if !ok || p.external {
		return tensor.Tensor{}, fmt.Errorf("%w: %q has data type %d (or external data)", ErrUnsupported, p.name, p.dataType)
	}
	t := tensor.Tensor{Name: p.name, DType: dt, Shape: p.dims}
	if t.Shape == nil {
		t.Shape = []int64{}
	}
	n, err := tensor.NumElements(t.Shape)
	if err != nil {
		return t, err
	}
	if dt == tensor.Bytes {
		return p.bytesTensor(t, n)
	}
	size := dt.Size()
	switch {
	case p.hasRaw:
		t.Data = p.raw
	case len(p.floats) > 0:
		for _, f := range p.floats {
			t.Data = binary.LittleEndian.AppendUint32(t.Data, math.Float32bits(f))
		}
	case len(p.doubles) > 0:
		for _, f := range p.doubles {
			t.Data = binary.LittleEndian.AppendUint64(t.Data, math.Float64bits(f))
		}
	default:
		// int32_data carries every type of 32 bits or less (bools, 16-bit
		// floats as their bits), int64_data and uint64_data the rest:
		// the low size bytes of each value.
		for _, v := range p.varints {
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], v)
			t.Data = append(t.Data, w[:size]...)
		}
	}
	if int64(len(t.Data)) != n*int64(size) {
		return t, fmt.Errorf("%q: %d bytes of data for shape %s of %s", p.name, len(t.Data), tensor.FormatShape(t.Shape), dt)
	}
	if t.Data == nil {
		t.Data = []byte{}
	}
	return t, nil
}

// bytesTensor lays STRING data (string_data) out as V2 BYTES: Triton's
// length-prefixed serialisation.
func (p *protoTensor) bytesTensor(t tensor.Tensor, n int64) (tensor.Tensor, error) {
	if int64(len(p.strs)) != n {
		return t, fmt.Errorf("%q: %d strings for shape %s", p.name, len(p.strs), tensor.FormatShape(t.Shape))
	}
	t.Data = []byte{}
	for _, s := range p.strs {
		t.Data = tensor.AppendBytesElement(t.Data, s)
	}
	return t, nil
}

func consumeInts(b []byte, typ protowire.Type, f func(uint64)) int {
	if typ == protowire.VarintType {
		v, n := protowire.ConsumeVarint(b)
		if n >= 0 {
			f(v)
		}
		return n
	}
	return packed(b, typ, func(b []byte) int {
		v, n := protowire.ConsumeVarint(b)
		if n >= 0 {
			f(v)
		}
		return n
	})
}

func consumeFixed32(b []byte, typ protowire.Type, f func(uint32)) int {
	if typ == protowire.Fixed32Type {
		v, n := protowire.ConsumeFixed32(b)
		if n >= 0 {
			f(v)
		}
		return n
	}
	return packed(b, typ, func(b []byte) int {
		v, n := protowire.ConsumeFixed32(b)
		if n >= 0 {
			f(v)
		}
		return n
	})
}

func consumeFixed64(b []byte, typ protowire.Type, f func(uint64)) int {
	if typ == protowire.Fixed64Type {
		v, n := protowire.ConsumeFixed64(b)
		if n >= 0 {
			f(v)
		}
		return n
	}
	return packed(b, typ, func(b []byte) int {
		v, n := protowire.ConsumeFixed64(b)
		if n >= 0 {
			f(v)
		}
		return n
	})
}

// packed walks a packed repeated field, each element consumed by one.
func packed(b []byte, typ protowire.Type, one func([]byte) int) int {
	if typ != protowire.BytesType {
		return -1
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return -1
	}
	for len(v) > 0 {
		k := one(v)
		if k < 0 {
			return -1
		}
		v = v[k:]
	}
	return n
}
