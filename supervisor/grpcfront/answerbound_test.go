package grpcfront

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// A client that gives no window to answers too small to be charged, on
// more RPCs than a connection may have open at once, has its connection
// closed at write_timeout, and the answers it left go with it; a client
// that reads gets its answers. Without the bound, each RPC ends once its
// answer is queued and the connection stays open with every answer held.
func TestUnreadSmallAnswersAreCutAtWriteTimeout(t *testing.T) {
	const answer, rpcs, write = 32 << 10, 512, 2 * time.Second
	var calls atomic.Int64
	o := Options{Handler: bigAnswers(answer, &calls), Budget: &ledger{limit: 8 << 20}, Timeouts: Timeouts{Write: write}}
	before := heapInUse()
	h, addr := hostileConn(t, o)
	start := time.Now()
	refused, cut := leaveUnread(t, h, addr, rpcs)
	select {
	case <-cut:
	case <-time.After(4 * write):
		t.Fatalf("the connection whose %d answers of %d KiB were not taken is open %v after the first, past write_timeout %v",
			rpcs, answer>>10, time.Since(start).Round(time.Millisecond), write)
	}
	if n := refused.Load(); n != 0 {
		t.Errorf("%d answers under the charged size were refused, want none", n)
	}
	var grew int64
	polltest.Until(t, 10*time.Second, 20*time.Millisecond, "the unread answers freed", func() bool {
		grew = int64(heapInUse()) - int64(before)
		return grew < 8<<20
	})
	t.Logf("cut %v after the first RPC, %d answered; heap +%d KiB after", time.Since(start).Round(time.Millisecond), calls.Load(), grew>>10)
	c := inferClient(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.ModelInfer(ctx, &pb.ModelInferRequest{ModelName: "m"})
	if err != nil {
		t.Fatalf("a client that reads its answers: %v", err)
	}
	wantOutput(t, resp, answer)
}
