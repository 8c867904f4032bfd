package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// grpcLegit is the well-behaved gRPC client: conns RPCs at once on one
// connection (as a gRPC client multiplexes), each ModelInfer of one MLP
// row with the key, back to back; the connection is opened once and
// reused across phases.
type grpcLegit struct {
	conn  *grpc.ClientConn
	infer pb.GRPCInferenceServiceClient
	conns int
}

func newGRPCLegit(addr string, conns int) (*grpcLegit, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("gRPC client of %s: %w", addr, err)
	}
	return &grpcLegit{conn: conn, infer: pb.NewGRPCInferenceServiceClient(conn), conns: conns}, nil
}

// legitInferRequest is the MLP row of legitBody as a ModelInferRequest.
func legitInferRequest() *pb.ModelInferRequest { return mlpRequest(1) }

// mlpRequest is an MLP request of rows rows (at most the suite's
// max_batch_size, 8).
func mlpRequest(rows int) *pb.ModelInferRequest {
	raw := make([]byte, 0, 64*rows)
	for i := range 16 * rows {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(float32(i%16)))
	}
	return &pb.ModelInferRequest{ModelName: "mlp",
		Inputs:           []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{int64(rows), 16}}},
		RawInputContents: [][]byte{raw}}
}

func (c *grpcLegit) run(ctx context.Context) legitResult {
	req := legitInferRequest()
	md := metadata.Pairs("x-api-key", apiKey)
	return loop(ctx, c.conns, 0, func() error {
		rctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(context.Background(), md), 30*time.Second)
		defer cancel()
		_, err := c.infer.ModelInfer(rctx, req)
		return err
	})
}

func (c *grpcLegit) close() { _ = c.conn.Close() }
