package grpcfront

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// rawInputField is ModelInferRequest's raw_input_contents.
const rawInputField = 7

// unmarshalInferRequest decodes the ModelInferRequest b into r as
// proto.Unmarshal does, except that each raw_input_contents entry is a
// slice of b, not a copy of it: protobuf-go copies every bytes field
// (its UnmarshalAliasBuffer flag covers only lazy submessages), and for
// the default model that copy of 600 KB was 12% of the master's CPU per
// RPC (issue 33). b must therefore be the caller's to give away: no one
// may write or reuse it while r, or a slice taken from r, lives; the
// garbage collector keeps it alive as long as an entry points into it.
//
// The other fields are decoded by proto.Unmarshal, one run of fields
// between raw entries at a time, merged into r: a message is the merge
// of its fields in order (protobuf's encoding), so the result is the
// same. A raw_input_contents field of the wrong wire type, or a
// malformed field, is left to protobuf, which keeps or refuses it as it
// would.
func unmarshalInferRequest(b []byte, r *pb.ModelInferRequest) error {
	proto.Reset(r)
	merge := proto.UnmarshalOptions{Merge: true}
	var raw [][]byte
	start := 0 // the run of fields not yet decoded: b[start:at]
	for at := 0; at < len(b); {
		num, typ, n := protowire.ConsumeTag(b[at:])
		if n < 0 {
			break
		}
		m := protowire.ConsumeFieldValue(num, typ, b[at+n:])
		if m < 0 {
			break
		}
		if num == rawInputField && typ == protowire.BytesType {
			if start < at {
				if err := merge.Unmarshal(b[start:at], r); err != nil {
					return err
				}
			}
			v, _ := protowire.ConsumeBytes(b[at+n : at+n+m])
			raw = append(raw, v[:len(v):len(v)]) // capped: an append copies, never writes into b
			start = at + n + m
		}
		at += n + m
	}
	if start < len(b) {
		if err := merge.Unmarshal(b[start:], r); err != nil {
			return err
		}
	}
	r.RawInputContents = raw
	return nil
}
