package v2

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// Prefix mode: the master asks a prep worker to judge a large body from
// its first bytes, before it reads the rest (see supervisor/front's
// precheck.go). The decoder runs its one set of rules on the prefix,
// knowing the whole body's length; running out of bytes is ErrTruncated,
// never an error in the request. So a prefix decode refuses only what the
// whole request would be refused for, whatever its remaining bytes are.

// ErrTruncated is wrapped by the error of a prefix decode that ran out of
// bytes before it found anything wrong: the caller lets the request go on.
var ErrTruncated = errors.New("the request prefix ends before the request can be judged")

// Truncated is the error DecodeInferRequestPrefix returns when nothing in
// the prefix is wrong but the prefix ends before the request does.
// errors.Is(err, ErrTruncated) holds for it.
type Truncated struct {
	// Request holds the inputs and outputs read whole so far. An input
	// whose binary data the prefix cuts is in it with the bytes present.
	Request *InferRequest
	// Open is the BYTES input the prefix ended in, when its name,
	// datatype and shape were read; nil otherwise.
	Open *OpenInput
	at   error // what the decoder met at the end of the prefix; nil: in binary data
}

func (t *Truncated) Error() string {
	if t.at == nil {
		return ErrTruncated.Error()
	}
	return ErrTruncated.Error() + ": " + t.at.Error()
}

// Unwrap returns ErrTruncated.
func (t *Truncated) Unwrap() error { return ErrTruncated }

// OpenInput is a BYTES input (encoded images, say) of which the prefix
// holds only the first elements.
type OpenInput struct {
	Name  string
	Shape []int64
	// Elements are the elements present whole, in order.
	Elements [][]byte
	// Tail is the start of the element the prefix cuts: its binary bytes,
	// or a JSON string's bytes up to its first escape sequence.
	Tail []byte
}

// DecodeInferRequestPrefix judges a request from prefix, the first bytes
// of a body of size bytes, with the rules and limits of
// DecodeInferRequestLimited: it returns that function's error for what is
// wrong within the prefix (the whole request would get the same), a
// *Truncated when the prefix ends first, or the request when the prefix
// holds all of it (size <= len(prefix), or only whitespace is missing).
// What it allocates is bounded by the prefix, not by declared shapes.
//
// A size below 0 is unknown (a chunked body): then the checks against the
// body's length pass.
func DecodeInferRequestPrefix(prefix []byte, size int64, headerLen int, lim Limits) (*InferRequest, error) {
	unknown := size < 0
	if unknown {
		size = math.MaxInt64 / 2 // room for offset arithmetic
	}
	if size <= int64(len(prefix)) {
		return DecodeInferRequestLimited(prefix[:size], headerLen, lim)
	}
	end := size
	if headerLen != noHeaderLength {
		if headerLen < 0 || int64(headerLen) > size {
			return nil, badRequest("Inference-Header-Content-Length %d is outside the %d-byte body", headerLen, size)
		}
		end = int64(headerLen)
	}
	header := prefix[:min(int64(len(prefix)), end)]
	d := decoder{s: scanner{b: header, end: int(end)}, req: &InferRequest{}, lim: lim, unsized: unknown}
	if err := d.request(); err != nil {
		// Whatever the decoder met at the very end of the prefix (a
		// value of the wrong kind, say) is not yet known to be wrong.
		if errors.Is(err, ErrTruncated) || d.s.i >= len(d.s.b) {
			return nil, &Truncated{Request: d.result(d.done), Open: d.open, at: err}
		}
		return nil, err
	}
	if headerLen != noHeaderLength && len(prefix) < headerLen {
		// The JSON ended before the header does: the rest of the header
		// is still to come (whitespace, or the whole decode refuses it).
		return nil, &Truncated{Request: d.result(len(d.inputs)), Open: d.open}
	}
	if err := d.binary(prefix, headerLen, size); err != nil {
		return nil, err
	}
	req := d.result(len(d.inputs))
	if d.cut {
		return nil, &Truncated{Request: req, Open: d.open}
	}
	return req, nil
}

// openBytes records a BYTES input whose JSON data the prefix cut: data
// holds its k whole elements, tensor-encoded, tail the cut one's start.
func (d *decoder) openBytes(in *input, data []byte, k int, tail []byte) {
	elems, err := tensor.BytesElements(data, int64(k))
	if err != nil { // AppendBytesElement wrote them: unreachable
		return
	}
	d.open = &OpenInput{Name: in.t.Name, Shape: in.t.Shape, Elements: elems, Tail: tail}
}

// cutBinary checks the binary data of an input the prefix cuts as far as
// it goes: for BYTES, each element present must fit in what the input
// declared, and no more elements than its shape. It sets d.cut.
func (d *decoder) cutBinary(in *input) error {
	d.cut = true
	if in.t.DType != tensor.Bytes || d.open != nil {
		return nil
	}
	open := &OpenInput{Name: in.t.Name, Shape: in.t.Shape}
	data, left := in.t.Data, in.binSize
	for k := int64(0); len(data) >= 4; k++ {
		size := int64(binary.LittleEndian.Uint32(data))
		switch {
		case k == in.n:
			return badRequest("%s: binary BYTES data for shape %s holds more than %d elements (each element is a 4-byte little-endian length, then the bytes)",
				in.label(), tensor.FormatShape(in.t.Shape), in.n)
		case 4+size > left:
			return badRequest("%s: binary BYTES data for shape %s: element %d: length %d but only %d bytes left (each element is a 4-byte little-endian length, then the bytes)",
				in.label(), tensor.FormatShape(in.t.Shape), k, size, left-4)
		case 4+size > int64(len(data)):
			open.Tail = data[4:]
			data = nil
		default:
			open.Elements = append(open.Elements, data[4:4+size])
			data = data[4+size:]
		}
		left -= 4 + size
	}
	d.open = open
	return nil
}

// rawString is the start of a JSON string's content, up to its first
// escape sequence: the bytes it decodes to, as far as they are known.
func rawString(b []byte) []byte {
	if i := bytes.IndexByte(b, '\\'); i >= 0 {
		return b[:i]
	}
	return b
}
