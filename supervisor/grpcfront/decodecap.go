package grpcfront

import (
	"bytes"
	"errors"
	"fmt"

	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"

	"github.com/supervisor-dev/supervisor/internal/budget"
	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront/decodecost"
)

// decodeCap is the server's codec: gRPC's proto codec, except that a
// ModelInferRequest (ModelInfer's, and each of ModelStreamInfer's) is
// weighed on the wire before it is decoded (decodecost.Of), and refused
// when decoding it would allocate more than max (max_body_bytes). The
// wire charge (see h2conn.Wire) holds a message's declared length only until
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
	n := decodecost.Of(b)
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
