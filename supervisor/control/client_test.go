package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// serveOnce answers one control exchange on dir's socket with resp and
// sends the request it read on got.
func serveOnce(t *testing.T, dir string, resp Response) <-chan Request {
	t.Helper()
	ln, err := net.Listen("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan Request, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		var req Request
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&req); err == nil {
			got <- req
		}
		_ = json.NewEncoder(conn).Encode(resp)
	}()
	return got
}

// TestCallExchange: Call sends one Request and returns the master's
// Response; a refusal (OK false) is an error carrying the master's reason,
// with the Response for its Result.
func TestCallExchange(t *testing.T) {
	dir := t.TempDir()
	got := serveOnce(t, dir, Response{OK: true, Status: &Status{PID: 42, Workers: []WorkerStatus{{Name: "prep-0", State: StateDegraded}}}})
	resp, err := Call(dir, "status", 10*time.Second)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if req := <-got; req.Cmd != "status" {
		t.Errorf("master read command %q, want status", req.Cmd)
	}
	if resp.Status == nil || resp.Status.PID != 42 || resp.Status.Workers[0].State != StateDegraded {
		t.Errorf("Call returned %+v", resp)
	}

	dir = t.TempDir()
	serveOnce(t, dir, Response{Error: "reload refused: stopping", Result: &OpResult{Op: "reload"}})
	resp, err = Call(dir, "reload", 10*time.Second)
	if err == nil || err.Error() != "reload refused: stopping" || resp == nil || resp.Result == nil || resp.Result.Op != "reload" {
		t.Errorf("refused reload: %+v, %v; want the master's error and its Result", resp, err)
	}
}

// TestCallRefusesUntrustedDir: nothing is sent to a dir others can write,
// and a dir with no socket is ErrNoMaster.
func TestCallRefusesUntrustedDir(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Call(open, "stop", time.Second); !errors.Is(err, ErrUnsafeRuntimeDir) {
		t.Errorf("Call on a world-writable dir: %v, want ErrUnsafeRuntimeDir", err)
	}
	if _, err := Call(t.TempDir(), "stop", time.Second); !errors.Is(err, ErrNoMaster) {
		t.Errorf("Call on an empty dir: %v, want ErrNoMaster", err)
	}
}

func TestReadPID(t *testing.T) {
	dir := t.TempDir()
	if pid := ReadPID(PIDFile(dir)); pid != 0 {
		t.Errorf("ReadPID of a missing file = %d, want 0", pid)
	}
	if err := os.WriteFile(PIDFile(dir), []byte("1234\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pid := ReadPID(PIDFile(dir)); pid != 1234 {
		t.Errorf("ReadPID = %d, want 1234", pid)
	}
}
