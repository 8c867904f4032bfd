package workers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/supervisor-dev/supervisor/worker"
)

// MakeEngineCaches creates, in the master, the TensorRT engine cache
// directory of every model a GPU infer worker of specs runs with TensorRT
// on, and gives it to the workers' user. A worker that dropped privileges
// cannot create it itself: the default, "trt-engines", is relative to the
// working directory, which under the systemd unit is the state directory
// /var/lib/onnx-supervisor, root's and not writable by workers.user. No-op when
// workers run as the master's user (the worker makes its own, see
// internal/ort). A directory that cannot be made is logged and left to
// the worker, which then serves that model as unavailable, saying why;
// the other models still serve.
func MakeEngineCaches(specs []worker.Spec, creds *Credentials, log zerolog.Logger) {
	if creds == nil {
		return
	}
	done := map[string]bool{}
	for _, s := range specs {
		if s.Provider != worker.ProviderCUDA {
			continue // CPU workers ignore the providers section
		}
		for _, m := range s.Models {
			if m.GPU == nil || !m.GPU.TensorRT.Enable || m.GPU.TensorRT.EngineCacheDir == "" || done[m.GPU.TensorRT.EngineCacheDir] {
				continue
			}
			dir := m.GPU.TensorRT.EngineCacheDir
			done[dir] = true
			if err := creds.mkdirAll(dir); err != nil {
				log.Error().Err(err).Str("model", m.Name).Str("dir", dir).Msg("could not make the TensorRT engine cache directory " +
					"for the workers' user: set providers.tensorrt.engine_cache_dir to a directory the master can create, or none")
			}
		}
	}
}

// mkdirAll is os.MkdirAll(dir, 0o750) with every directory it creates
// given to the workers' user, so that they can reach and write dir; dir
// itself is given to them when it already exists and is someone else's.
// Existing parents are left as they are. A symbolic link in dir's path
// is refused (mkdirOwned, chownDir), not followed.
func (c *Credentials) mkdirAll(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolve %q: %w", dir, err)
	}
	missing, err := missingDirs(abs)
	if err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := c.mkdirOwned(missing[i]); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return nil
	}
	if fi, err := os.Stat(abs); err == nil && !c.owns(fi) {
		return c.chownDir(abs)
	}
	return nil
}

// mkdirOwned makes dir 0750 and gives it to the workers' user, through
// no symbolic link: the parents made before it are the workers', and on a
// reload the workers run, so a worker could swap one for a link to a
// directory of root's between the Mkdir and the chown, and root's chown
// follows links.
func (c *Credentials) mkdirOwned(dir string) error {
	parent, err := openNoLinks(filepath.Dir(dir))
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	if err := unix.Mkdirat(parent, filepath.Base(dir), 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %q: %w", dir, err)
	}
	return c.chownDir(dir)
}

// chownDir gives the directory dir to the workers' user, refusing a
// symbolic link anywhere in its path (see mkdirOwned): it changes the
// directory it opened, not whatever the path names by then.
func (c *Credentials) chownDir(dir string) error {
	fd, err := openNoLinks(dir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, c.uid, c.gid); err != nil {
		return fmt.Errorf("give %q to the workers' user: %w", dir, err)
	}
	return nil
}

// openNoLinks opens the directory dir with openat2's RESOLVE_NO_SYMLINKS
// (Linux 5.6 or later).
func openNoLinks(dir string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return -1, fmt.Errorf("open %q without following symbolic links (one in the path is refused: "+
			"a worker may have put it there; set engine_cache_dir to a path without links): %w", dir, err)
	}
	return fd, nil
}

// missingDirs lists abs and its parents that do not exist, deepest first;
// an existing one that is not a directory is an error.
func missingDirs(abs string) ([]string, error) {
	var missing []string
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil && !fi.IsDir() {
			return nil, fmt.Errorf("%q is not a directory", p)
		}
		if err == nil || p == filepath.Dir(p) {
			return missing, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) { // ENOTDIR: a parent is a file, found above
			return nil, fmt.Errorf("look at %q: %w", p, err)
		}
		missing = append(missing, p)
	}
}
