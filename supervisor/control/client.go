package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// ErrNoMaster: nothing answers on the control socket (no master runs
// there, or it has stopped).
var ErrNoMaster = errors.New("no supervisor is running there")

// Call sends one command to the master behind runtimeDir's control
// socket and returns its answer. timeout bounds the whole exchange. A
// runtime dir that is not root's or this user's, or that others can
// write, is refused (ErrUnsafeRuntimeDir) before anything is sent.
func Call(runtimeDir, cmd string, timeout time.Duration) (*Response, error) {
	if err := TrustedDir(runtimeDir); err != nil {
		return nil, err
	}
	path := SocketPath(runtimeDir)
	conn, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return nil, fmt.Errorf("%w (control socket %q: %v)", ErrNoMaster, path, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if err := json.NewEncoder(conn).Encode(Request{Cmd: cmd}); err != nil {
		return nil, fmt.Errorf("send %q to %q: %w", cmd, path, err)
	}
	var resp Response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		return nil, fmt.Errorf("read the answer to %q from %q: %w", cmd, path, err)
	}
	if !resp.OK {
		if resp.Error == "" {
			resp.Error = cmd + " failed"
		}
		return &resp, errors.New(resp.Error)
	}
	return &resp, nil
}
