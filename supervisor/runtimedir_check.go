package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// ErrUnsafeRuntimeDir: the runtime dir (or a file in it) is not this
// master's alone. Everything in the dir is trusted: the control socket
// (stop, reload, upgrade), the worker sockets that carry requests and
// their API keys, the pid file `supervisor stop` and status read. A dir
// another user owns or can write, or a symlink to one, would let that user
// swap a socket or forge the pid file, so the master refuses to start.
var ErrUnsafeRuntimeDir = errors.New("unsafe runtime_dir")

// makeRuntimeDir creates dir with mode 0700 when it does not exist (its
// parents too) and reports whether it did. The mode is set again after
// mkdir because the umask may have removed bits; whether the dir is ours
// is ownDir's to check, after this: the default parent ($TMPDIR) is
// world-writable, so someone may have created dir first.
func makeRuntimeDir(dir string) (bool, error) {
	if _, err := os.Lstat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return false, nil // there (ownDir judges it) or unreadable (ownDir says why)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return false, fmt.Errorf("create the parent of runtime_dir %q: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil // someone was faster: ownDir judges theirs
		}
		return false, fmt.Errorf("create runtime_dir %q: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return true, fmt.Errorf("runtime_dir %q: set mode 0700: %w", dir, err)
	}
	return true, nil
}

// ownDir checks that dir is a directory (not a symlink: Lstat) owned by
// this process's effective uid that neither group nor others can write
// (0700, or 0711 when workers run as another user).
func ownDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("runtime_dir %q: %w", dir, err)
	}
	const fix = "remove it (or choose another runtime_dir) and start again; the master creates it with mode 0700"
	if err := checkDir(fi, fix, os.Geteuid()); err != nil {
		return fmt.Errorf("runtime_dir %q: %w", dir, err)
	}
	return nil
}

// trustedControlDir checks, before a client talks to the control socket in
// dir, that the dir is a master's: not a symlink, owned by root or by
// this user (a master refuses any other), and not writable by group or
// others. Anyone else's dir may hold anyone's socket, answering "stopped"
// to a stop that stopped nothing.
func trustedControlDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil // nothing there: dialing says no supervisor runs
	}
	const fix = "no supervisor of yours or root's runs there; check runtime_dir (or --runtime-dir)"
	if err := checkDir(fi, fix, 0, os.Geteuid()); err != nil {
		return fmt.Errorf("runtime_dir %q: %w", dir, err)
	}
	return nil
}

// checkDir judges a runtime dir's Lstat: a directory owned by one of
// owners that group and others cannot write. fix says what to do.
func checkDir(fi fs.FileInfo, fix string, owners ...int) error {
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

// writePIDFile writes this process's pid to dir's pid file without
// following a symlink: it writes a new file (O_EXCL, so never through a
// link) and renames it over the pid file, which replaces a symlink
// planted there instead of writing to its target.
func writePIDFile(dir string) error {
	f, err := os.CreateTemp(dir, pidFileName+".tmp*")
	if err != nil {
		return fmt.Errorf("write pid file in %q: %w", dir, err)
	}
	tmp := f.Name()
	_, err = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	if err == nil {
		err = f.Chmod(0o644) // `supervisor status` may run as another user
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, PIDFile(dir))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write pid file in %q: %w", dir, err)
	}
	return nil
}
