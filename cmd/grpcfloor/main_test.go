package main

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// counting is an upstream that answers every ModelInfer and counts them.
type counting struct {
	pb.UnimplementedGRPCInferenceServiceServer
	asked atomic.Int64
}

func (c *counting) ModelInfer(_ context.Context, r *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	c.asked.Add(1)
	return &pb.ModelInferResponse{ModelName: r.ModelName, RawOutputContents: [][]byte{{1, 2, 3}}}, nil
}

// serveGRPC serves svc on a loopback port and returns a client of it.
func serveGRPC(t *testing.T, register func(*grpc.Server)) (string, pb.GRPCInferenceServiceClient) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	go s.Serve(ln) //nolint:errcheck // ends with Stop
	t.Cleanup(s.Stop)
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return ln.Addr().String(), pb.NewGRPCInferenceServiceClient(cc)
}

// TestGRPCFloorAsksOnceThenAnswersFromMemory: unary and streamed
// requests for one model cost the upstream one ModelInfer in all.
func TestGRPCFloorAsksOnceThenAnswersFromMemory(t *testing.T) {
	up := &counting{}
	upAddr, _ := serveGRPC(t, func(s *grpc.Server) { pb.RegisterGRPCInferenceServiceServer(s, up) })
	f, err := newGRPCFloor(upAddr)
	if err != nil {
		t.Fatal(err)
	}
	_, c := serveGRPC(t, f.register)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		r, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "m"})
		if err != nil || len(r.RawOutputContents) != 1 {
			t.Fatalf("ModelInfer: %v, %v; want the upstream's answer", r, err)
		}
	}
	s, err := c.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&pb.ModelInferRequest{ModelName: "m"}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Recv(); err != nil || len(r.GetInferResponse().GetRawOutputContents()) != 1 {
		t.Fatalf("stream: %v, %v; want the upstream's answer", r, err)
	}
	if n := up.asked.Load(); n != 1 {
		t.Errorf("the upstream was asked %d times, want 1", n)
	}
}

// TestHTTPFloorAsksOnceThenAnswersFromMemory: the HTTP side keeps the
// first answer per method and path, binary-extension header included.
func TestHTTPFloorAsksOnceThenAnswersFromMemory(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	up := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		asked.Add(1)
		ctx.Response.Header.Set(inferHeaderLength, "2")
		ctx.SetContentType("application/octet-stream")
		ctx.SetBodyString("{}xyz")
	}}
	go up.Serve(ln) //nolint:errcheck // ends with Shutdown
	t.Cleanup(func() { up.Shutdown() })
	f := newHTTPFloor(ln.Addr().String())
	for range 3 {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v2/models/m/infer")
		ctx.Request.SetBodyString("request")
		f.handle(&ctx)
		if got := string(ctx.Response.Body()); ctx.Response.StatusCode() != 200 || got != "{}xyz" ||
			string(ctx.Response.Header.Peek(inferHeaderLength)) != "2" {
			t.Fatalf("answer %d %q (%s=%q), want 200 the upstream's", ctx.Response.StatusCode(), got,
				inferHeaderLength, ctx.Response.Header.Peek(inferHeaderLength))
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the upstream was asked %d times, want 1", n)
	}
}
