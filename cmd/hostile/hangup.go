package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/onnxmodel"
)

// The hang-up attacks send runs of several seconds to slowModel and go
// after hangUpAfter: the HTTP client closes its connection, the gRPC
// client cancels its RPC (a cancel, not a deadline: a deadline takes the
// client-timeout path, not the hang-up one). Nothing waits for those runs,
// so only stopping them on the hang-up frees the model's one instance for
// the quick client (newQuickClient), whose run is otherwise queued behind
// every abandoned one: max_run_time (slowMaxRunTime) is well above the
// phase, so it frees nothing in time.
const (
	slowModel      = "slow"
	slowNodes      = 400       // onnxmodel.SlowSin's Sin nodes
	slowLongN      = 5_000_000 // about 5s of sines on one core: far past hangUpAfter, well under slowMaxRunTime loaded
	slowQuickN     = 3         // answered at once
	slowMaxRunTime = "20s"     // models[].max_run_time of slowModel
	hangUpAfter    = 50 * time.Millisecond
	outcomeHungUp  = "hung up" // the attack client left before any answer
)

// quickTimeout bounds each request of the quick client, below any phase,
// so that a quick run queued behind abandoned runs is an error in its
// phase rather than an answer after it. It is the quick client's target
// in place of a p99 ratio: the hang-up must be seen (an epoll event in
// the master, the prep worker and the infer worker in turn; internal/hangup)
// before the quick run gets the instance, so its steady millisecond is
// no measure here, while one abandoned run not stopped (slowLongN, about
// 5s) is more than twice the bound.
const (
	quickTimeout = 2 * time.Second
	quickPace    = 20 * time.Millisecond
)

// slowRun is a V2 request of slowModel: n floats through each node.
func slowRun(n int) []byte {
	return []byte(fmt.Sprintf(`{"inputs":[{"name":"n","datatype":"INT64","shape":[],"data":[%d]}]}`, n))
}

// slowConfigItem is slowModel's entry under models: one instance, no
// batching (a scalar input), and a max_run_time far above a phase.
func slowConfigItem(modelsDir string) string {
	return fmt.Sprintf("  - {name: %s, path: %s, batching: {max_batch_size: 0, instances: 1}, max_run_time: %s}\n",
		slowModel, filepath.Join(modelsDir, slowModel+".onnx"), slowMaxRunTime)
}

// writeModels writes onnxmodel.WriteAll's models and slowModel into dir.
func writeModels(dir string) error {
	if err := onnxmodel.WriteAll(dir); err != nil {
		return err
	}
	b, err := onnxmodel.SlowSin(slowNodes).Marshal()
	if err != nil {
		return fmt.Errorf("encode the %s model: %w", slowModel, err)
	}
	return os.WriteFile(filepath.Join(dir, slowModel+".onnx"), b, 0o644)
}

// newQuickClient measures slowModel's quick inputs: one connection, one
// request every quickPace, each bounded by quickTimeout. It competes with
// the hang-up attacks for slowModel's one instance.
func newQuickClient(addr string) *legitClient {
	c := newClient(addr, slowModel, "application/json", slowRun(slowQuickN), 1, quickPace)
	c.http.Timeout = quickTimeout
	return c
}

// hangUpAttacks are the rows of clients that hang up on slow runs.
func hangUpAttacks() []attack {
	return []attack{
		raw("hangup-slow", 16, "hung up: the master sees the close, the run is stopped (supervisor_client_closed_requests_total)", hangUpHTTP),
		fromOwnAddress(raw("grpc-cancel-slow", 16, "hung up: the RPC's cancel is seen, the run is stopped (supervisor_client_closed_requests_total)", hangUpGRPC)),
	}
}

// isHangUp reports whether name is one of hangUpAttacks.
func isHangUp(name string) bool {
	return slices.ContainsFunc(hangUpAttacks(), func(a attack) bool { return a.name == name })
}

// fromOwnAddress dials the attack's gRPC connections from a loopback
// address no other attack uses (past grpcAttacks'), so that whatever
// its cancels might earn under grpc.abuse_penalty is its own.
func fromOwnAddress(a attack) attack { a.grpcFrom = "127.0.0.40"; return a }

// hangUpHTTP posts a slow run with the key and closes the connection
// after hangUpAfter, over and over.
func hangUpHTTP(ctx context.Context, t target, rec *answers) {
	body := slowRun(slowLongN)
	req := []byte(fmt.Sprintf("POST /v2/models/%s/infer HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		slowModel, t.addr, apiKey, len(body), body))
	for ctx.Err() == nil {
		rec.add(postAndHangUp(ctx, t.addr, req))
	}
}

// postAndHangUp writes req on a fresh connection and closes it after
// hangUpAfter: the outcome is outcomeHungUp, or the status of an answer
// that came first.
func postAndHangUp(ctx context.Context, addr string, req []byte) string {
	conn, failed := dial(ctx, addr)
	if conn == nil {
		return failed
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(hangUpAfter))
	if _, err := conn.Write(req); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return outcomeCut
	}
	// readStatus says held for a read past the deadline: ours, the hang-up
	if out := readStatus(ctx, conn); out != outcomeHeld || ctx.Err() != nil {
		return out
	}
	return outcomeHungUp
}

// hangUpGRPC calls ModelInfer with a slow run on a connection of its own
// and cancels each call after hangUpAfter, over and over.
func hangUpGRPC(ctx context.Context, t target, rec *answers) {
	conn, err := grpc.NewClient(t.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: 5 * time.Second}
			if t.grpcFrom != "" {
				d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(t.grpcFrom)}
			}
			return d.DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		rec.add(outcomeRefused)
		return
	}
	defer conn.Close()
	infer := pb.NewGRPCInferenceServiceClient(conn)
	req := &pb.ModelInferRequest{ModelName: slowModel,
		Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "n", Datatype: "INT64", Shape: []int64{},
			Contents: &pb.InferTensorContents{Int64Contents: []int64{slowLongN}}}}}
	md := metadata.Pairs("x-api-key", apiKey)
	for ctx.Err() == nil {
		rec.add(inferAndCancel(ctx, infer, req, md))
	}
}

// inferAndCancel calls ModelInfer and cancels it after hangUpAfter: the
// outcome is outcomeHungUp, or the status of an answer that came first.
func inferAndCancel(ctx context.Context, infer pb.GRPCInferenceServiceClient, req *pb.ModelInferRequest, md metadata.MD) string {
	rctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ctx, md))
	defer cancel()
	hangUp := time.AfterFunc(hangUpAfter, cancel)
	_, err := infer.ModelInfer(rctx, req)
	if hangUp.Stop() || ctx.Err() != nil {
		// answered (or failed) before the hang-up, or the phase ended
		if ctx.Err() != nil && err != nil {
			return outcomeHeld
		}
		return "grpc " + status.Code(err).String()
	}
	return outcomeHungUp
}

// clientClosed reads supervisor_client_closed_requests_total from the
// master's /metrics: the requests it saw hang up. It is -1 where the
// binary has no such metric (one from before the hang-up work).
func clientClosed(metricsAddr string) (int64, error) {
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("scrape the master's metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "supervisor_client_closed_requests_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("supervisor_client_closed_requests_total %q: %w", v, err)
			}
			return int64(f), nil
		}
	}
	return -1, sc.Err()
}
