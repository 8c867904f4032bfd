package conformance

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// errNotJSON marks inputs a JSON warm-up request cannot carry.
var (
	errNotJSON = errors.New("has infinities, which JSON numbers cannot carry")
	errNotUTF8 = errors.New("has a string that is not UTF-8, which JSON strings cannot carry")
)

// WarmupJSON writes inputs as a V2 infer request in JSON (flat data), the
// format of a model's warmup file: replaying a test's own inputs warms up
// models that reject zeros (a Reshape to a zero shape, a Slice step of 0).
// Floats are written with the shortest exact representation; NaN is null.
func WarmupJSON(inputs []tensor.Tensor) ([]byte, error) {
	b := []byte(`{"inputs":[`)
	for i, t := range inputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"name":%q,"datatype":%q,"shape":[`, t.Name, t.DType)
		for j, d := range t.Shape {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, `],"data":[`...)
		var err error
		if b, err = appendValues(b, t); err != nil {
			return nil, fmt.Errorf("input %q: %w", t.Name, err)
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...), nil
}

func appendValues(b []byte, t tensor.Tensor) ([]byte, error) {
	if t.DType == tensor.Bytes {
		return appendStrings(b, t)
	}
	size := t.DType.Size()
	for k := 0; k+size <= len(t.Data); k += size {
		if k > 0 {
			b = append(b, ',')
		}
		e := t.Data[k : k+size]
		switch t.DType {
		case tensor.Bool:
			b = strconv.AppendBool(b, e[0] != 0)
		case tensor.FP32, tensor.FP64, tensor.FP16, tensor.BF16:
			v := floatReader(t.DType)(e)
			switch {
			case math.IsNaN(v):
				b = append(b, "null"...)
			case math.IsInf(v, 0):
				return nil, errNotJSON
			case t.DType == tensor.FP64:
				b = strconv.AppendFloat(b, v, 'g', -1, 64)
			default:
				b = strconv.AppendFloat(b, v, 'g', -1, 32)
			}
		case tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64:
			b = strconv.AppendInt(b, signExtend(e), 10)
		default:
			var w [8]byte
			copy(w[:], e)
			b = strconv.AppendUint(b, binary.LittleEndian.Uint64(w[:]), 10)
		}
	}
	return b, nil
}

// signExtend reads a little-endian signed integer of len(e) bytes.
func signExtend(e []byte) int64 {
	var w [8]byte
	copy(w[:], e)
	shift := 64 - 8*uint(len(e))
	return int64(binary.LittleEndian.Uint64(w[:])<<shift) >> shift
}

// appendStrings writes a BYTES tensor's elements as JSON strings, which
// can carry only valid UTF-8.
func appendStrings(b []byte, t tensor.Tensor) ([]byte, error) {
	n, err := tensor.NumElements(t.Shape)
	if err != nil {
		return nil, err
	}
	elems, err := tensor.BytesElements(t.Data, n)
	if err != nil {
		return nil, err
	}
	for i, e := range elems {
		if !utf8.Valid(e) {
			return nil, errNotUTF8
		}
		if i > 0 {
			b = append(b, ',')
		}
		q, _ := json.Marshal(string(e))
		b = append(b, q...)
	}
	return b, nil
}
