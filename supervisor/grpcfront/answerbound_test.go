package grpcfront

import (
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/supervisor-dev/supervisor/internal/budget/budgettest"
	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/supervisor/grpcfront/h2conn"
)

// A client that gives no window to answers too small to be charged, on
// more RPCs than a connection may have open at once, has its connection
// closed at write_timeout, and the answers it left go with it; a client
// that reads gets its answers, unary and streamed. Without the bound, each RPC ends once its
// answer is queued and the connection stays open with every answer held.
func TestUnreadSmallAnswersAreCutAtWriteTimeout(t *testing.T) {
	const answer, rpcs, write = 32 << 10, 512, 2 * time.Second
	var calls atomic.Int64
	b := &budgettest.Ledger{Limit: 8 << 20}
	o := Options{Handler: bigAnswers(answer, &calls), Budget: b, Timeouts: Timeouts{Write: write}}
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
	servedAndReleased(t, addr, b, answer)
}

// BenchmarkAnswerMarshal is the codec's work for a small infer answer
// sent and written: plain (no bound) against bound (wrapped as the
// interceptor does, its timer started and stopped).
func BenchmarkAnswerMarshal(b *testing.B) {
	c := answerCodec{newDecodeCap(1 << 30), &heldAnswers{}}
	resp := &pb.ModelInferResponse{ModelName: "mlp", Outputs: []*pb.ModelInferResponse_InferOutputTensor{
		{Name: "y", Datatype: "FP32", Shape: []int64{1, 10}}}, RawOutputContents: [][]byte{make([]byte, 40)}}
	for _, bench := range []struct {
		name string
		t    Timeouts
	}{{"plain", Timeouts{}}, {"bound", Timeouts{Write: time.Minute}}} {
		b.Run(bench.name, func(b *testing.B) {
			conn := &h2conn.Entry{}
			b.ReportAllocs()
			for b.Loop() {
				out, err := c.Marshal(bench.t.bound(resp, conn))
				if err != nil || out.Len() != proto.Size(resp) {
					b.Fatalf("%d bytes, %v; want %d", out.Len(), err, proto.Size(resp))
				}
				out.Free()
			}
		})
	}
}
