package answercost

import (
	"github.com/supervisor-dev/supervisor/internal/tensor"
	"github.com/supervisor-dev/supervisor/internal/v2"
)

// answerTextBytes is the most JSON text an element of each datatype
// takes, its comma included: an INT64 "-9223372036854775808," 21, an
// FP32 (FP16 and BF16 are written as FP32) up to 9 digits,
// "-1.00000075e-36," 16, an FP64 25, a BOOL "false," 6. BYTES elements
// vary: see Of.
var answerTextBytes = [...]int64{
	tensor.Bool: 6, tensor.Uint8: 4, tensor.Uint16: 6, tensor.Uint32: 11, tensor.Uint64: 21,
	tensor.Int8: 5, tensor.Int16: 7, tensor.Int32: 12, tensor.Int64: 21,
	tensor.FP16: 16, tensor.FP32: 16, tensor.FP64: 25, tensor.BF16: 16,
}

// bytesTextPerByte bounds the JSON text of a byte of a BYTES element
// (a \u00XX escape), its length prefix counted as bytes too.
const bytesTextPerByte = 6

// Fields is room for the JSON around the tensors.
const Fields = 4 << 10

// Of is the memory the answer of outs to req holds: the outputs,
// and the answer written from them (binary: their bytes; JSON: the
// longest text of each element).
func Of(req *v2.InferRequest, outs []tensor.Tensor) int64 {
	n := int64(Fields)
	for i := range outs {
		t := &outs[i]
		data := int64(len(t.Data))
		switch _, bin := req.SelectOutput(t.Name); {
		case bin:
			n += 2 * data
		case t.DType == tensor.Bytes:
			n += (1 + bytesTextPerByte) * data
		default:
			n += data + data/int64(max(t.DType.Size(), 1))*textBytes(t.DType)
		}
	}
	return n
}

// textBytes is answerTextBytes of d (0 for BYTES and unknown types).
func textBytes(d tensor.DType) int64 {
	if int(d) < len(answerTextBytes) {
		return answerTextBytes[d]
	}
	return 0
}

// Expected is Of of the outputs a model declares for req, their
// first dimension, when variable, the rows of req's first input; an
// output whose size the declaration leaves open (another variable
// dimension, BYTES) counts nothing here, and is charged once it comes
// back. The rows are the client's word (a [2^40,0] input of a [-1,-1]
// model carries no data), so the sums saturate at Ceiling, which
// takes the whole lane, rather than wrap to nothing.
func Expected(outputs []tensor.Spec, req *v2.InferRequest) int64 {
	rows := int64(1)
	if len(req.Inputs) > 0 && len(req.Inputs[0].Shape) > 0 {
		rows = req.Inputs[0].Shape[0]
	}
	n := int64(Fields)
	for _, o := range outputs {
		include, bin := req.SelectOutput(o.Name)
		elems, ok := declaredElements(o.Shape, rows)
		if !include || !ok || o.DType == tensor.Bytes {
			continue
		}
		size := int64(o.DType.Size())
		if bin {
			n = min(n+saturatedProduct(elems, 2*size), Ceiling)
		} else {
			n = min(n+saturatedProduct(elems, size+textBytes(o.DType)), Ceiling)
		}
	}
	return n
}

// Ceiling bounds Expected: above any lane, and twice it
// still fits an int64.
const Ceiling = 1 << 61

// saturatedProduct is a*b for a, b >= 0, at most Ceiling.
func saturatedProduct(a, b int64) int64 {
	if b != 0 && a > Ceiling/b {
		return Ceiling
	}
	return a * b
}

// Chunks is Expected of the first k chunks of an image
// request, each like chunk (one input tensor of the chunk's images): an
// image model's outputs are declared per chunk (a fixed batch of 1 per
// image, or the chunk's rows), and the chunks' outputs are stacked into
// one answer.
func Chunks(outputs []tensor.Spec, chunk *v2.InferRequest, k int) int64 {
	return min(Fields+saturatedProduct(int64(k), Expected(outputs, chunk)-Fields), Ceiling)
}

// declaredElements is the element count of a declared shape whose first
// dimension, if variable, is rows (at most Ceiling); false when
// another is variable.
func declaredElements(shape []int64, rows int64) (int64, bool) {
	n := int64(1)
	for i, d := range shape {
		if d < 0 && i == 0 {
			d = rows
		}
		if d < 0 {
			return 0, false
		}
		n = saturatedProduct(n, d)
	}
	return n, true
}
