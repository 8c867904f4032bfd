package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// freshClient opens a new connection for every request: a kept-alive one
// may still reach a master that has since handed over, and what is
// checked is that the listening socket accepts.
var freshClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// listenersAnswer checks each listener of in (public HTTP, gRPC, metrics)
// on a new connection: an HTTP infer of mlp, a gRPC ModelInfer of mlp and
// a /metrics scrape must each succeed. It returns one error per listener
// that did not answer, nil when all did.
func listenersAnswer(in *instance) []error {
	var errs []error
	if err := httpInfersMLP(in); err != nil {
		errs = append(errs, err)
	}
	if err := grpcInfersMLP(in); err != nil {
		errs = append(errs, err)
	}
	if err := metricsScrape(in); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// mlpRow is a V2 JSON request of one mlp row.
const mlpRow = `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}]}`

// httpInfersMLP posts one mlp row to the public listener on a new
// connection and wants 200.
func httpInfersMLP(in *instance) error {
	return freshPost(in.url+"/v2/models/mlp/infer", mlpRow, http.StatusOK)
}

// grpcInfersMLP sends one ModelInfer of mlp to the gRPC listener on a new
// connection.
func grpcInfersMLP(in *instance) error {
	conn, err := grpc.NewClient(in.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("gRPC: dial %s: %w", in.grpcAddr, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := pb.NewGRPCInferenceServiceClient(conn).ModelInfer(ctx, mlpRequest("listeners", seq(16, 1)))
	if err != nil {
		return fmt.Errorf("gRPC ModelInfer on %s: %w", in.grpcAddr, err)
	}
	if len(r.RawOutputContents) != 1 || len(r.RawOutputContents[0]) != 16 {
		return fmt.Errorf("gRPC ModelInfer on %s answered %v, want one output of 4 FP32", in.grpcAddr, r)
	}
	return nil
}

// metricsScrape GETs /metrics on a new connection and wants 200 with the
// supervisor's own samples.
func metricsScrape(in *instance) error {
	resp, err := freshClient.Get(in.metricsURL + "/metrics")
	if err != nil {
		return fmt.Errorf("metrics scrape: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains("\n"+string(b), "\nsupervisor_ready 1\n") {
		return fmt.Errorf("metrics scrape: %d, want 200 with supervisor_ready 1:\n%.300s", resp.StatusCode, b)
	}
	return nil
}

// freshPost POSTs body to url on a new connection and wants code.
func freshPost(url, body string, code int) error {
	resp, err := freshClient.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != code {
		return fmt.Errorf("POST %s: %d %s, want %d", url, resp.StatusCode, b, code)
	}
	return nil
}
