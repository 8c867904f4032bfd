package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/supervisor-dev/supervisor/supervisor/control"
)

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
	if err := control.CheckDir(fi, fix, os.Geteuid()); err != nil {
		return fmt.Errorf("runtime_dir %q: %w", dir, err)
	}
	return nil
}

// writePIDFile writes this process's pid to dir's pid file without
// following a symlink: it writes a new file (O_EXCL, so never through a
// link) and renames it over the pid file, which replaces a symlink
// planted there instead of writing to its target.
func writePIDFile(dir string) error {
	f, err := os.CreateTemp(dir, control.PIDFileName+".tmp*")
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
		err = os.Rename(tmp, control.PIDFile(dir))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write pid file in %q: %w", dir, err)
	}
	return nil
}
