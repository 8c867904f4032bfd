package supervisor

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// runtimeDir is the directory that holds one instance's Unix sockets, its
// control socket and its pid file. Two instances with different runtime
// dirs never touch each other's files.
type runtimeDir struct {
	path    string
	created bool
}

const (
	controlSocketName = "control.sock"
	pidFileName       = "supervisor.pid"
)

// ControlSocket is the path of the control socket inside a runtime dir.
func ControlSocket(dir string) string { return filepath.Join(dir, controlSocketName) }

// prepareRuntimeDir creates dir (0700) and claims it: it refuses a dir whose
// control socket still answers (another live instance) and clears files a
// dead instance left behind.
func prepareRuntimeDir(dir string) (*runtimeDir, error) {
	rd := &runtimeDir{path: dir}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		rd.created = true
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create runtime_dir %q: %w", dir, err)
	}
	if c, err := net.DialTimeout("unix", rd.controlSocket(), time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("runtime_dir %q is in use by a running supervisor (its control socket answers); stop it first or use another runtime_dir", dir)
	}
	rd.removeOwnFiles()
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := os.WriteFile(filepath.Join(dir, pidFileName), pid, 0o644); err != nil {
		return nil, fmt.Errorf("write pid file in %q: %w", dir, err)
	}
	return rd, nil
}

func (rd *runtimeDir) controlSocket() string { return ControlSocket(rd.path) }

// removeOwnFiles deletes sockets and the pid file; it leaves anything else
// an operator put there alone.
func (rd *runtimeDir) removeOwnFiles() {
	socks, _ := filepath.Glob(filepath.Join(rd.path, "*.sock"))
	for _, s := range socks {
		_ = os.Remove(s)
	}
	_ = os.Remove(filepath.Join(rd.path, pidFileName))
}

// cleanup removes this instance's files, and the directory itself when this
// instance created it and nothing else is left in it.
func (rd *runtimeDir) cleanup() {
	rd.removeOwnFiles()
	if rd.created {
		_ = os.Remove(rd.path) // fails harmlessly when not empty
	}
}
