package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ErrUnsafeRuntimeDir: the runtime dir (or a file in it) is not this
// master's alone. Everything in the dir is trusted: the control socket
// (stop, reload, upgrade), the worker sockets that carry requests and
// their API keys, the pid file `supervisor stop` and status read. A dir
// another user owns or can write, or a symlink to one, would let that user
// swap a socket or forge the pid file, so the master refuses to start.
var ErrUnsafeRuntimeDir = errors.New("unsafe runtime_dir")

const (
	socketName = "control.sock"
	// PIDFileName is the serving master's pid file in a runtime dir; the
	// master writes it by rename (a temporary file with this prefix first).
	PIDFileName = "supervisor.pid"
)

// SocketPath is the path of the control socket inside a runtime dir.
func SocketPath(dir string) string { return filepath.Join(dir, socketName) }

// PIDFile is the path of the serving master's pid file inside a runtime dir.
func PIDFile(dir string) string { return filepath.Join(dir, PIDFileName) }

// TrustedDir checks, before a client talks to the control socket in
// dir, that the dir is a master's: not a symlink, owned by root or by
// this user (a master refuses any other), and not writable by group or
// others. Anyone else's dir may hold anyone's socket, answering "stopped"
// to a stop that stopped nothing.
func TrustedDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil // nothing there: dialing says no supervisor runs
	}
	const fix = "no supervisor of yours or root's runs there; check runtime_dir (or --runtime-dir)"
	if err := CheckDir(fi, fix, 0, os.Geteuid()); err != nil {
		return fmt.Errorf("runtime_dir %q: %w", dir, err)
	}
	return nil
}

// CheckDir judges a runtime dir's Lstat: a directory owned by one of
// owners that group and others cannot write. fix says what to do.
func CheckDir(fi fs.FileInfo, fix string, owners ...int) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: it is a symbolic link; %s", ErrUnsafeRuntimeDir, fix)
	case !fi.IsDir():
		return fmt.Errorf("%w: it is not a directory (%s); %s", ErrUnsafeRuntimeDir, fi.Mode().Type(), fix)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: cannot tell its owner", ErrUnsafeRuntimeDir)
	}
	if !slices.Contains(owners, int(st.Uid)) {
		return fmt.Errorf("%w: it is owned by uid %d, not by uid %v; another user may have created it to take the control and worker sockets; %s",
			ErrUnsafeRuntimeDir, st.Uid, owners, fix)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%w: mode %#o lets group or others write in it; chmod 0700 it, or %s",
			ErrUnsafeRuntimeDir, perm, fix)
	}
	return nil
}

// ReadPID reads a pid file; 0 if it cannot.
func ReadPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
