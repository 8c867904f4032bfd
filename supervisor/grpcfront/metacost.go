package grpcfront

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/supervisor-dev/supervisor/internal/budget"
)

// An RPC's metadata is held, decoded, for as long as the RPC is open:
// each field as two strings and an entry in the stream's metadata map,
// which for small fields is several times what the header list size
// (max_header_bytes, which HTTP/2 counts as name + value + 32 per field)
// lets through: 370 one-byte fields, 14.6 KiB of list, held about 54
// KiB. MaxRPCs streams waiting for their message (until body_timeout)
// each with a list at max_header_bytes (1 MiB at most) would hold
// gigabytes no budget knew of. So an RPC's metadata beyond freeMetadata
// is charged to the body budget (metadataCost) from its header to its
// end, and an RPC whose metadata finds no room is refused
// RESOURCE_EXHAUSTED at its header, as a body would be 503. The first
// freeMetadata of each RPC is not charged, as its stream is not (about
// 20 KiB): MaxRPCs bounds both (16 MiB of metadata with the defaults),
// and a well-behaved RPC's few hundred bytes of metadata then hold
// nothing, so an idle stream still holds no budget.
const (
	fieldCost    = 160     // a field's cost beyond its name and value (measured: about 140)
	freeMetadata = 4 << 10 // of an RPC's metadataCost, not charged
)

// metadataCost is what the decoded metadata md holds.
func metadataCost(md metadata.MD) int64 {
	var n int64
	for k, vs := range md {
		for _, v := range vs {
			n += int64(len(k)+len(v)) + fieldCost
		}
	}
	return n
}

var errMetadataBudget = status.Error(codes.ResourceExhausted, "server busy: request metadata and bodies in flight fill "+
	"limits.max_body_bytes_in_flight; retry later")

// chargeMetadata charges b the RPC's metadata md (nil b, or metadata
// within freeMetadata: the nil charge, holding nothing), or refuses when
// it has no room.
func chargeMetadata(b Budget, md metadata.MD) (*budget.Charge, error) {
	if b == nil {
		return nil, nil
	}
	n := metadataCost(md) - freeMetadata
	if n <= 0 {
		return nil, nil
	}
	c, err := b.ReserveBody(n)
	if err != nil {
		return nil, errMetadataBudget
	}
	return c, nil
}
