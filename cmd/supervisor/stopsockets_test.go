package main

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopRefusesGRPCDuringTheDrain: on a stop that hands over to no one,
// the gRPC socket stops listening when the drain starts (a client that
// connects gets "connection refused", not a queued connection reset at
// exit), while the metrics listener still answers until the workers have
// stopped. An idle keep-alive client holds the drain open for
// drain.ClientGrace (5s), long enough to look.
func TestStopRefusesGRPCDuringTheDrain(t *testing.T) {
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}})
	idle := in.dial(t)
	if _, err := idle.Write([]byte("GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(idle), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("live on the idle connection: %v %v", resp, err)
	}
	if err := dialOnce(in.grpcAddr); err != nil {
		t.Fatalf("gRPC dial before the stop: %v", err)
	}
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	pollUntil(t, 10*time.Second, "the gRPC socket to refuse connections during the drain", func() bool {
		return errors.Is(dialOnce(in.grpcAddr), syscall.ECONNREFUSED)
	})
	select {
	case <-in.exited:
		t.Fatal("the master exited before the check: the drain was not held open")
	default:
	}
	if resp, err := httpClient.Get(in.metricsURL + "/metrics"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics during the drain: %v %v, want 200 (it answers until the workers stopped)", resp, err)
	} else {
		resp.Body.Close()
	}
	in.waitExit(60 * time.Second)
	if log := in.log.String(); strings.Contains(log, "gRPC listener failed") || strings.Contains(log, "new connections wait until the master exits") {
		t.Errorf("the stop logged a listener failure:\n%s", log)
	}
}

// dialOnce connects to addr and closes the connection.
func dialOnce(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err
}
