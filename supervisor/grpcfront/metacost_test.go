package grpcfront

import (
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/supervisor-dev/supervisor/internal/budget/budgettest"
	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// manyKeys is n metadata fields of one-byte values.
func manyKeys(n int) []string {
	var md []string
	for i := range n {
		md = append(md, "x-k"+strconv.Itoa(i), "v")
	}
	return md
}

// An RPC's metadata past freeMetadata is charged from its header until
// it ends; one whose metadata finds no room is refused
// RESOURCE_EXHAUSTED at its header and gives back its grpc.max_rpcs
// place.
func TestMetadataIsChargedUntilTheRPCEnds(t *testing.T) {
	b := &budgettest.Ledger{Limit: 64 << 10}
	h, addr := hostileConn(t, Options{Handler: unreached(t), Budget: b, MaxRPCs: 1, MaxHeaderBytes: 64 << 10,
		Timeouts: Timeouts{Message: 2 * time.Second}})
	id, err := h.Open(addr, inferMethod, manyKeys(200)...) // 200 x (6 + 1 + 160) + the rest, less 4 KiB
	if err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the metadata charged", func() bool { return b.InUse() > 200*160-freeMetadata })
	if err := h.Framer.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the charge given back", func() bool { return b.InUse() == 0 })

	id, err = h.Open(addr, inferMethod, manyKeys(500)...) // 80 KiB: no room
	if err != nil {
		t.Fatal(err)
	}
	if how, err := h.End(id); how != "grpc ResourceExhausted" || b.InUse() != 0 {
		t.Fatalf("metadata over the budget: %q (%v), %d charged, want grpc ResourceExhausted and nothing", how, err, b.InUse())
	}
	// Its grpc.max_rpcs place (1) was given back: the next RPC is taken,
	// and waits for its message until Timeouts.Message.
	if id, err = h.Open(addr, inferMethod); err != nil {
		t.Fatal(err)
	}
	if how, err := h.End(id); how != "grpc Canceled" {
		t.Fatalf("the next RPC: %q (%v), want grpc Canceled at the message timeout: the refused one kept its grpc.max_rpcs place", how, err)
	}
}
