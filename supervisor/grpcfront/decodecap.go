package grpcfront

import (
	"bytes"
	"errors"
	"fmt"

	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/supervisor-dev/supervisor/internal/budget"
	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// decodeCap is the server's codec: gRPC's proto codec, except that a
// ModelInferRequest (ModelInfer's, and each of ModelStreamInfer's) is
// weighed on the wire before it is decoded (decodedCost), and refused
// when decoding it would allocate more than max (max_body_bytes). The
// wire charge (see wire) holds a message's declared length only until
// it is whole; what it decodes to is held uncharged beside the body the
// front charges, and protobuf's packed encoding lets a small message
// decode to far more: an int64_contents zero is one byte on the wire
// and eight decoded (then eight again packed into the body); an empty
// bytes_contents element is two bytes and a 24-byte slice header; an
// empty input is two bytes and a struct. Without the cap one message of
// max_body_bytes cost the master 16 times that, uncharged, before the
// front refused the body it became (over max_body_bytes). With it, a
// request the front would take (its body within max_body_bytes) is
// refused only when typed contents pack smaller than they decode
// (INT8/16 in int_contents, BYTES of empty elements) past max_body_bytes
// decoded, or within a few hundred bytes of it. Elements sent unpacked
// (one tag each, which protobuf encoders do not write for proto3) count
// twice their size: they are appended one at a time.
//
// The cap is a lane check (internal/budget): what one message may hold
// decoded is a lane whose room is max_body_bytes, as what one body may
// hold is; nothing is charged to it, since the body the front charges
// holds the decoded message's bytes once it is built.
//
// gRPC reports a codec's refusal as INTERNAL (its message says why): it
// gives a codec no other code.
type decodeCap struct {
	encoding.CodecV2
	decoded *budget.Lane // one message decoded: room max_body_bytes
}

// ErrDecodedTooLarge is a ModelInferRequest refused before decoding:
// see decodeCap.
var ErrDecodedTooLarge = errors.New("ModelInferRequest too large once decoded")

func newDecodeCap(max int64) decodeCap {
	return decodeCap{CodecV2: encoding.GetCodecV2(protocodec.Name), decoded: &budget.Lane{Name: "decoded ModelInferRequest", Room: max}}
}

// Unmarshal weighs a ModelInferRequest before it decodes it (into a
// heldRequest for ModelInfer: see modelInferHandler); it decodes every
// other message as gRPC's proto codec does.
func (c decodeCap) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *pb.ModelInferRequest: // ModelStreamInfer's
		return c.unmarshalInfer(materialize(data), m)
	case *heldRequest: // ModelInfer's
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		m.req = new(pb.ModelInferRequest)
		if err := c.unmarshalInfer(buf.ReadOnlyData(), m.req); err != nil {
			buf.Free()
			return err
		}
		m.buf = buf
		return nil
	default:
		return c.CodecV2.Unmarshal(data, v)
	}
}

// unmarshalInfer weighs the ModelInferRequest b, then decodes it into
// r, its raw_input_contents aliasing b.
func (c decodeCap) unmarshalInfer(b []byte, r *pb.ModelInferRequest) error {
	n := decodedCost(b)
	if err := c.decoded.Check(n); err != nil {
		return fmt.Errorf("%w: it would take %d bytes decoded (message %d bytes), over max_body_bytes (%d): packed typed contents "+
			"and empty repeated entries decode to many times their size; send fewer elements, or the data in raw_input_contents",
			ErrDecodedTooLarge, n, len(b), c.decoded.Capacity())
	}
	return unmarshalInferRequest(b, r)
}

// materialize copies data into one fresh slice, not a pooled buffer:
// raw_input_contents alias it (unmarshalInferRequest) for as long as the
// request lives, and gRPC frees the frames in data once Unmarshal
// returns. bytes.Join allocates it unzeroed: mem.BufferSlice.Materialize
// zeroes 600 KB for the default model before it copies into them, which
// cost what aliasing saved (issue 33).
func materialize(data mem.BufferSlice) []byte {
	parts := make([][]byte, len(data))
	for i, buf := range data {
		parts[i] = buf.ReadOnlyData()
	}
	return bytes.Join(parts, nil)
}

// The decoded cost of what decodedCost counts beyond bytes: a struct
// (an input, an output, a parameter with its map entry) and a slice
// header (a []byte of raw_input_contents or bytes_contents).
const (
	structCost = 256
	sliceCost  = 24
)

// elementSize is the decoded size of an element of InferTensorContents
// field i: bool, int (int32), int64, uint (uint32), uint64, fp32, fp64.
var elementSize = [...]int64{1: 1, 2: 4, 3: 8, 4: 4, 5: 8, 6: 4, 7: 8}

// decodedCost weighs what decoding the ModelInferRequest b allocates
// and holds: a raw_input_contents entry is a slice header into b
// (unmarshalInferRequest), and then the whole of b is held.
// Malformed input counts what it has read: proto.Unmarshal refuses it.
func decodedCost(b []byte) (n int64) {
	aliased := false
	walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte) {
		n += int64(len(v))
		switch {
		case num == 5 && typ == protowire.BytesType: // inputs
			n += structCost - int64(len(v)) + inputCost(v)
		case num == rawInputField && typ == protowire.BytesType: // aliases b: counted below
			n += sliceCost - int64(len(v))
			aliased = true
		case num == 4: // parameters
			n += structCost
		case num == 6 && typ == protowire.BytesType: // outputs
			n += structCost + outputCost(v)
		case num == 6:
			n += structCost
		}
	})
	if aliased {
		n += int64(len(b))
	}
	return n
}

// inputCost weighs an InferInputTensor: its shape and contents decoded.
func inputCost(b []byte) (n int64) {
	walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte) {
		switch {
		case num == 3 && typ == protowire.BytesType: // shape, packed: sized at once
			n += 8 * varints(v)
		case num == 3 && typ == protowire.VarintType: // one element of a shape, unpacked
			n += 2 * 8 // appended: the slice grows up to twice what it holds
		case num == 4: // parameters
			n += structCost + int64(len(v))
		case num == 5 && typ == protowire.BytesType: // contents: its struct and elements
			n += structCost + contentsCost(v)
		default:
			n += int64(len(v))
		}
	})
	return n
}

// outputCost weighs an InferRequestedOutputTensor beyond its bytes: a
// struct for each of its parameters (a map entry and its value), as the
// request's and an input's are counted, since a parameter of a few bytes
// decodes to about 100.
func outputCost(b []byte) (n int64) {
	walkFields(b, func(num protowire.Number, _ protowire.Type, _ []byte) {
		if num == 2 { // parameters
			n += structCost
		}
	})
	return n
}

// contentsCost weighs an InferTensorContents: each element decoded, a
// BYTES element its slice header and bytes.
func contentsCost(b []byte) (n int64) {
	walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte) {
		switch {
		case num == 8: // bytes_contents
			n += sliceCost + int64(len(v))
		case num < 1 || int(num) >= len(elementSize):
			n += int64(len(v)) // unknown: kept as is
		case typ != protowire.BytesType: // one element, unpacked: appended, as a shape's
			n += 2 * elementSize[num]
		case num == 6 || num == 7: // fp32, fp64, packed: fixed size
			n += int64(len(v))
		default: // varints, packed
			n += elementSize[num] * varints(v)
		}
	})
	return n
}

// walkFields calls f with each field of the message b: its number, wire
// type and value (the payload of a length-delimited one, else its
// bytes); it stops at the first malformed field.
func walkFields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte)) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return
		}
		v := b[n : n+m]
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(v)
		}
		f(num, typ, v)
		b = b[n+m:]
	}
}

// varints counts the varints packed in b (the bytes that end one).
func varints(b []byte) int64 {
	var n int64
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	return n
}
