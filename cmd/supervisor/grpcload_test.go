package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// grpcLoad keeps clients sending ModelInfer one at a time until stopped,
// each client on its own connection, counting the RPCs that fail.
type grpcLoad struct {
	stop   chan struct{}
	wg     sync.WaitGroup
	sent   atomic.Int64
	failed atomic.Int64
	first  atomic.Value // string: the first failure
}

func startGRPCLoad(t *testing.T, in *instance, clients int) *grpcLoad {
	l := &grpcLoad{stop: make(chan struct{})}
	for i := range clients {
		c := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
		l.wg.Add(1)
		go l.client(c, mlpRequest(fmt.Sprint("load-", i), seq(16, 1)))
	}
	return l
}

func (l *grpcLoad) client(c pb.GRPCInferenceServiceClient, req *pb.ModelInferRequest) {
	defer l.wg.Done()
	for range maxLoadRequests {
		select {
		case <-l.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := c.ModelInfer(ctx, req)
		cancel()
		l.sent.Add(1)
		if err != nil || len(r.RawOutputContents) != 1 || len(r.RawOutputContents[0]) != 16 {
			l.failed.Add(1)
			l.first.CompareAndSwap(nil, fmt.Sprintf("%v (%s)", err, status.Code(err)))
		}
	}
}

func (l *grpcLoad) waitFor(t *testing.T, n int64) {
	t.Helper()
	target := l.sent.Load() + n
	pollUntil(t, 60*time.Second, fmt.Sprintf("%d more RPCs answered", n), func() bool { return l.sent.Load() >= target })
}

func (l *grpcLoad) finish(t *testing.T, what string) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if n := l.failed.Load(); n > 0 {
		t.Fatalf("%s: %d of %d RPCs failed, first: %v", what, n, l.sent.Load(), l.first.Load())
	}
	t.Logf("%s: %d RPCs, none failed", what, l.sent.Load())
}

// TestGRPCReloadAndUpgradeUnderLoad: RPCs keep succeeding, on connections
// opened before, through a reload and an upgrade: the new master serves
// the gRPC listener it inherited, and the old one's GracefulStop lets its
// RPCs finish while clients move to the new one.
func TestGRPCReloadAndUpgradeUnderLoad(t *testing.T) {
	needORT(t)
	bin := filepath.Join(t.TempDir(), "supervisor")
	install(t, binPath, bin)
	in := startInstance(t, options{prepWorkers: 2, modelNames: []string{"mlp"}, bin: bin})
	l := startGRPCLoad(t, in, 4)
	l.waitFor(t, 100)
	if out, err := in.cli("reload"); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	l.waitFor(t, 100)
	before := in.status().PID
	if out, err := in.cli("upgrade"); err != nil {
		t.Fatalf("upgrade: %v\n%s", err, out)
	}
	if after := in.status().PID; after == before {
		t.Fatalf("upgrade: the same master (pid %d) still serves", after)
	}
	pollUntil(t, 30*time.Second, fmt.Sprintf("the old master %d exits", before), func() bool { return processGone(before) })
	l.waitFor(t, 100)
	// A connection opened now reaches the new master.
	if _, err := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in)).ModelInfer(withKey(t, "x", "y"), mlpRequest("after", seq(16, 1))); err != nil {
		t.Fatalf("a new connection after the upgrade: %v", err)
	}
	l.finish(t, "a reload and an upgrade")
	if out, err := in.cli("stop"); err != nil {
		t.Fatalf("stop the upgraded master: %v\n%s", err, out)
	}
}

// TestGRPCStopDrains: an RPC in flight when the master is told to stop
// (here: waiting in the batcher's queue) is answered; meanwhile the gRPC
// listener is closed, so a new connection's RPC is UNAVAILABLE; the master
// then exits 0.
func TestGRPCStopDrains(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"},
		batching: map[string]string{"mlp": "{max_batch_size: 8, max_queue_delay: 3s}"}})
	c := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	answered := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err := c.ModelInfer(ctx, mlpRequest("in-flight", seq(16, 1)))
		answered <- err
	}()
	pollUntil(t, 30*time.Second, "the RPC waits in the batcher's queue", func() bool {
		var st struct {
			ModelStats []struct {
				QueueDepth int `json:"queue_depth"`
			} `json:"model_stats"`
		}
		code, body, _ := in.get("/v2/models/mlp/stats")
		return code == 200 && json.Unmarshal(body, &st) == nil && len(st.ModelStats) == 1 && st.ModelStats[0].QueueDepth > 0
	})
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var last error
	pollUntil(t, 30*time.Second, "a new connection's RPC is UNAVAILABLE while the master drains", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, last = pb.NewGRPCInferenceServiceClient(dialGRPC(t, in)).ServerLive(ctx, &pb.ServerLiveRequest{})
		return status.Code(last) == codes.Unavailable
	})
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the RPC in flight during the stop failed: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the RPC in flight was not answered within 60s of the stop")
	}
	in.waitExit(30 * time.Second)
}
