package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// upgradeIdleBound is the most an upgrade may take from the hand-over
// (the new master serves) to the old master's exit with only idle
// clients connected: well under drain.ClientGrace (5s), which an idle
// keep-alive client used to hold the old master for.
const upgradeIdleBound = 2500 * time.Millisecond

// TestUpgradeIsNotHeldByIdleClients: an idle keep-alive HTTP client and
// an idle gRPC client do not hold the old master after the hand-over, as
// nginx closes idle keep-alive connections at once on a graceful stop:
// the upgrade (its CLI returns as the old master exits) finishes within
// upgradeIdleBound of the hand-over, the idle HTTP connection is closed
// (its client reconnects to the new master) and both clients are served
// by the new master afterwards.
func TestUpgradeIsNotHeldByIdleClients(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}})
	idle := in.dial(t)
	br := bufio.NewReader(idle)
	if _, err := idle.Write([]byte("GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("live on the idle connection: %v %v", resp, err)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	g := pb.NewGRPCInferenceServiceClient(dialGRPC(t, in))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := g.ServerLive(ctx, &pb.ServerLiveRequest{}); err != nil {
		t.Fatalf("gRPC ServerLive before the upgrade: %v", err)
	}
	prev := in.status()

	start := time.Now()
	upgraded := make(chan cliResult, 1)
	go func() { out, err := in.cli("upgrade"); upgraded <- cliResult{out, err} }()
	var handedOver time.Time
	pollUntil(t, 90*time.Second, "the old master hands over", func() bool {
		if strings.Contains(in.log.String(), "upgrade: the new master serves") {
			handedOver = time.Now()
			return true
		}
		return false
	})
	var res cliResult
	select {
	case res = <-upgraded:
	case <-time.After(60 * time.Second):
		t.Fatal("supervisor upgrade has not returned 60s after the hand-over")
	}
	took, total := time.Since(handedOver), time.Since(start)
	if res.err != nil {
		t.Fatalf("upgrade: %v\n%s", res.err, res.out)
	}
	t.Logf("upgrade with an idle HTTP and an idle gRPC client: %v, %v of it after the hand-over", total.Round(time.Millisecond), took.Round(time.Millisecond))
	if took > upgradeIdleBound {
		t.Errorf("the old master exited %v after the hand-over with only idle clients, want within %v", took, upgradeIdleBound)
	}
	pollUntil(t, 10*time.Second, "the old master exits", func() bool { return processGone(prev.PID) })
	_ = idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("the idle HTTP connection after the old master exited: %v, want EOF (closed)", err)
	}
	if st := in.status(); st.PID == prev.PID {
		t.Fatalf("the old master %d still serves", prev.PID)
	}
	if _, err := g.ServerLive(ctx, &pb.ServerLiveRequest{}); err != nil {
		t.Errorf("gRPC ServerLive after the upgrade, on the new master: %v", err)
	}
	resp, err := http.Get(in.url + "/v2/health/live")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP live after the upgrade: %v %v", resp, err)
	}
	resp.Body.Close()
}
