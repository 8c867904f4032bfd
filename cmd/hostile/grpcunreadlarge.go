package main

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// grpc-unread-large gives the server a stream window of 0, then calls
// ModelInfer on answerModel (the types model) largeUnreadRPCs times with
// just under 1 MiB of rows (within the server's stream window; the
// attack does no flow control, so it paces its requests, largeUnreadPace
// apart, for the server's connection window updates to keep up, and for
// the requests' own charges to come and go, as a client's who waits for
// each answer's header would), whose answers are as large, and never
// takes them:
// gRPC sends a unary answer after its handler returns, so each stays
// queued on the connection. The master charges each to its body budget
// until it is written: past the budget they are RESOURCE_EXHAUSTED, and
// write_timeout closes the connection, giving the rest back. Full run
// only (it needs the types model).
const grpcUnreadLargeName = "grpc-unread-large"

// largeUnreadRPCs is how many answers each client leaves unread per
// connection: 8 clients x 64 x 1 MiB = 512 MiB unbounded.
const largeUnreadRPCs = 64

// largeUnreadPace is the pause between two of a client's requests.
const largeUnreadPace = 50 * time.Millisecond

// largeRows is the rows of the request: 36 bytes each, in and out.
const largeRows = (1<<20 - 4<<10) / 36

// typesRequest is a ModelInfer of rows rows of the types model.
func typesRequest(rows int) *pb.ModelInferRequest {
	ids, mask := make([]byte, rows*4*8), make([]byte, rows*4)
	for i := range mask {
		ids[i*8] = byte(i)
		mask[i] = byte(i & 1)
	}
	return &pb.ModelInferRequest{ModelName: answerModel,
		Inputs: []*pb.ModelInferRequest_InferInputTensor{
			{Name: "ids", Datatype: "INT64", Shape: []int64{int64(rows), 4}},
			{Name: "mask", Datatype: "BOOL", Shape: []int64{int64(rows), 4}}},
		RawInputContents: [][]byte{ids, mask}}
}

func unreadLarge(ctx context.Context, t target, s *session, rec *answers) {
	if !s.noWindow(ctx, rec) {
		return
	}
	msg, _ := proto.Marshal(typesRequest(largeRows))
	frame := hostile.Message(msg)
	for range largeUnreadRPCs {
		id, err := s.Open(t.grpcAddr, inferMethod, "x-api-key", apiKey)
		for rest := frame; err == nil && len(rest) > 0; {
			n := min(len(rest), 16<<10) // HTTP/2's default largest frame
			err = s.Framer.WriteData(id, n == len(rest), rest[:n])
			rest = rest[n:]
		}
		if err != nil {
			rec.add(lost(ctx, err))
			return
		}
		s.drainEnds(rec)
		select {
		case <-ctx.Done():
		case <-time.After(largeUnreadPace):
		}
	}
	for ctx.Err() == nil {
		select {
		case err := <-s.done:
			rec.add(lost(ctx, err))
			return
		case <-time.After(100 * time.Millisecond):
			s.drainEnds(rec)
		case <-ctx.Done():
		}
	}
	rec.add(outcomeHeld)
}
