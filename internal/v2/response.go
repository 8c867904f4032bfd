package v2

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// AppendInferResponse appends the V2 infer response
// {"model_name":..,"model_version":..,"id":..,"outputs":[{"name","datatype","shape","data":[...]}]}
// to dst, model being the served name (versions.go: "mlp@2" answers
// model_name "mlp", model_version "2"). "id" is left out when the request
// had none.
//
// When req lists outputs, only those are written (in the order of
// outputs); otherwise all are. An output flagged binary (its
// RequestedOutput.Binary, or BinaryOutputs for an unlisted one) is written
// as binary tensor data after the JSON header, in the order of the entries,
// with "parameters":{"binary_data_size":N} in its entry. headerLen is the
// length of the JSON header, to send as Inference-Header-Content-Length, or
// -1 when nothing is binary. A nil req writes every output as JSON.
//
// NaN and ±Inf are written as null: JSON has no other way to carry them.
// FP16 and BF16 values are written as the shortest decimal that reads back
// as the same float32.
func AppendInferResponse(dst []byte, model string, req *InferRequest, outputs []tensor.Tensor) (out []byte, headerLen int) {
	start := len(dst)
	name, version := SplitServedName(model)
	dst = append(dst, `{"model_name":`...)
	dst = appendString(dst, name)
	dst = append(dst, `,"model_version":`...)
	dst = appendString(dst, version)
	if req != nil && req.ID != "" {
		dst = append(dst, `,"id":`...)
		dst = appendString(dst, req.ID)
	}
	dst = append(dst, `,"outputs":[`...)
	first, anyBinary := true, false
	for i := range outputs {
		t := &outputs[i]
		include, bin := req.SelectOutput(t.Name)
		if !include {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		anyBinary = anyBinary || bin
		dst = appendOutput(dst, t, bin)
	}
	dst = append(dst, "]}"...)
	if !anyBinary {
		return dst, -1
	}
	headerLen = len(dst) - start
	for i := range outputs {
		if include, bin := req.SelectOutput(outputs[i].Name); include && bin {
			dst = append(dst, outputs[i].Data...)
		}
	}
	return dst, headerLen
}

// SelectOutput reports whether the response to req carries the output
// called name, and whether as binary tensor data. A nil req asks for
// every output, in JSON.
func (req *InferRequest) SelectOutput(name string) (include, binary bool) {
	if req == nil {
		return true, false
	}
	if len(req.Outputs) == 0 {
		return true, req.BinaryOutputs
	}
	for _, o := range req.Outputs {
		if o.Name == name {
			return true, o.Binary
		}
	}
	return false, false
}

func appendOutput(dst []byte, t *tensor.Tensor, bin bool) []byte {
	dst = append(dst, `{"name":`...)
	dst = appendString(dst, t.Name)
	dst = append(dst, `,"datatype":"`...)
	dst = append(dst, t.DType.String()...)
	dst = append(dst, `","shape":`...)
	dst = appendShape(dst, t.Shape)
	if bin {
		dst = append(dst, `,"parameters":{"binary_data_size":`...)
		dst = strconv.AppendInt(dst, int64(len(t.Data)), 10)
		return append(dst, "}}"...)
	}
	dst = append(dst, `,"data":`...)
	dst = appendData(dst, t)
	return append(dst, '}')
}

// appendData writes t's values as a flat JSON array. A trailing partial
// element (a malformed tensor) is ignored rather than read out of bounds.
func appendData(dst []byte, t *tensor.Tensor) []byte {
	if t.DType == tensor.Bytes {
		return appendBytesData(dst, t)
	}
	size := t.DType.Size()
	if size == 0 {
		return append(dst, "[]"...)
	}
	n := len(t.Data) / size
	b := t.Data
	dst = append(dst, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		v := b[i*size : (i+1)*size]
		switch t.DType {
		case tensor.FP32:
			dst = appendFloat(dst, float64(math.Float32frombits(binary.LittleEndian.Uint32(v))), 32)
		case tensor.FP64:
			dst = appendFloat(dst, math.Float64frombits(binary.LittleEndian.Uint64(v)), 64)
		case tensor.FP16:
			dst = appendFloat(dst, float64(tensor.FP16To32(binary.LittleEndian.Uint16(v))), 32)
		case tensor.BF16:
			dst = appendFloat(dst, float64(tensor.BF16To32(binary.LittleEndian.Uint16(v))), 32)
		case tensor.Bool:
			dst = strconv.AppendBool(dst, v[0] != 0)
		case tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64:
			dst = strconv.AppendInt(dst, signExtend(readUint(v), size), 10)
		default:
			dst = strconv.AppendUint(dst, readUint(v), 10)
		}
	}
	return append(dst, ']')
}

// appendFloat writes the shortest decimal that reads back as f at the given
// bit size, or null for NaN and ±Inf, which JSON cannot express.
func appendFloat(dst []byte, f float64, bitSize int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bitSize)
}

func readUint(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func signExtend(v uint64, size int) int64 {
	shift := 64 - 8*size
	return int64(v<<shift) >> shift
}

// appendBytesData writes a BYTES tensor's elements as a flat array of JSON
// strings (invalid UTF-8 becomes U+FFFD; ask for binary output to get the
// bytes exactly). Malformed data ends the array where it stops parsing.
func appendBytesData(dst []byte, t *tensor.Tensor) []byte {
	dst = append(dst, '[')
	b := t.Data
	for i := 0; len(b) >= 4; i++ {
		n := binary.LittleEndian.Uint32(b)
		if uint64(n) > uint64(len(b)-4) {
			break
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, string(b[4:4+n]))
		b = b[4+n:]
	}
	return append(dst, ']')
}
