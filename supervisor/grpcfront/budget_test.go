package grpcfront

import (
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// fakeBudget is a Budget of limit bytes.
type fakeBudget struct {
	mu          sync.Mutex
	limit, used int64
}

func (b *fakeBudget) ReserveBody(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

func (b *fakeBudget) ReleaseBody(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
}

func (b *fakeBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Messages being assembled are charged to the Budget before gRPC reads
// them: with room for two largest messages, two RPCs trickling theirs
// hold it all and a third is refused RESOURCE_EXHAUSTED at its header;
// an RPC's end gives its charge back.
func TestMessagesAreChargedBeforeTheyAreRead(t *testing.T) {
	const maxMsg = 1000
	b := &fakeBudget{limit: 2 * maxMsg}
	h, addr := hostileConn(t, Options{Handler: unreached(t), MaxMessageBytes: maxMsg, Budget: b})
	var ids []uint32
	for range 2 {
		id, err := h.Open(addr, inferMethod)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Framer.WriteData(id, false, append(hostile.MessagePrefix(maxMsg), "0123456789"...)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "both messages charged", func() bool { return b.inUse() == 2*maxMsg })
	refusedBusy(t, h, addr, "the third RPC")
	for _, id := range ids {
		if err := h.Framer.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
			t.Fatal(err)
		}
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the charges given back", func() bool { return b.inUse() == 0 })
}

// A stream is charged the largest message while it waits in RecvMsg, so
// its messages are bounded as a unary RPC's are.
func TestStreamMessageIsCharged(t *testing.T) {
	const maxMsg = 1000
	b := &fakeBudget{limit: maxMsg}
	h, addr := hostileConn(t, Options{Handler: unreached(t), MaxMessageBytes: maxMsg, Budget: b})
	id, err := h.Open(addr, streamMethod)
	if err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the stream's message charged", func() bool { return b.inUse() == maxMsg })
	refusedBusy(t, h, addr, "a unary RPC")
	if err := h.Framer.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the charge given back", func() bool { return b.inUse() == 0 })
}

// refusedBusy opens a ModelInfer RPC on h and checks that it is refused
// RESOURCE_EXHAUSTED at its header.
func refusedBusy(t *testing.T, h *hostile.H2, addr, what string) {
	t.Helper()
	id, err := h.Open(addr, inferMethod)
	if err != nil {
		t.Fatal(err)
	}
	if how, err := h.End(id); how != "grpc ResourceExhausted" {
		t.Fatalf("%s ended %q (%v), want grpc ResourceExhausted", what, how, err)
	}
}
