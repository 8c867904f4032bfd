// Command grpcfloor measures what the transports alone cost: a bare
// grpc-go server (grpc.NewServer() with its defaults and the generated
// protobuf codec) and a bare fasthttp server, each answering inference
// requests from memory. It asks the supervisor (-upstream-http,
// -upstream-grpc) once per model and method for the answer, keeps it,
// and from then on answers every request with it: the gRPC side still
// decodes each ModelInferRequest and encodes the ModelInferResponse, the
// HTTP side still reads each request and writes the answer, but nothing
// goes anywhere.
//
// scripts/bench-grpc (FLOOR=1) runs cmd/grpcbench against it beside the
// supervisor, in the same run: its gRPC ÷ HTTP CPU per request is what
// grpc-go's HTTP/2 server and protobuf cost over fasthttp's HTTP/1 for
// the same messages, a cost no code in the master can remove; the
// master's own gRPC ÷ HTTP beside it says how much of the master's gap
// that is (issue 33). A measuring instrument, not a product: it has no
// bound but fasthttp's body limit and grpc-go's message limit, and it
// trusts that a model's requests all get the same answer (the benchmark
// sends one request over and over).
//
//	grpcfloor -http 127.0.0.1:18110 -grpc 127.0.0.1:18111 \
//	  -upstream-http 127.0.0.1:18100 -upstream-grpc 127.0.0.1:18101
package main

import (
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/valyala/fasthttp"
	"google.golang.org/grpc"
)

func main() {
	httpAddr := flag.String("http", "127.0.0.1:18110", "host:port for HTTP")
	grpcAddr := flag.String("grpc", "127.0.0.1:18111", "host:port for gRPC")
	upHTTP := flag.String("upstream-http", "127.0.0.1:18100", "the supervisor's HTTP host:port, asked once per answer")
	upGRPC := flag.String("upstream-grpc", "127.0.0.1:18101", "the supervisor's gRPC host:port, asked once per answer")
	flag.Parse()
	if err := run(*httpAddr, *grpcAddr, *upHTTP, *upGRPC); err != nil {
		fmt.Fprintln(os.Stderr, "grpcfloor:", err)
		os.Exit(1)
	}
}

func run(httpAddr, grpcAddr, upHTTP, upGRPC string) error {
	g, err := newGRPCFloor(upGRPC)
	if err != nil {
		return err
	}
	gl, err := net.Listen("tcp", grpcAddr)
	if err != nil {
		return err
	}
	hl, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	g.register(srv)
	errs := make(chan error, 2)
	go func() { errs <- srv.Serve(gl) }()
	h := newHTTPFloor(upHTTP)
	hs := &fasthttp.Server{Handler: h.handle, MaxRequestBodySize: 64 << 20, NoDefaultServerHeader: true}
	go func() { errs <- hs.Serve(hl) }()
	return <-errs
}
