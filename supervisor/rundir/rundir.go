package rundir

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// Dir is the directory that holds one instance's Unix sockets, its
// control socket and its pid file. Two instances with different runtime
// dirs never touch each other's files. During an upgrade two masters of
// the same instance share it: each names its worker sockets after its own
// pid (SocketPrefix), and the shared files (control socket, pid file)
// belong to the master that serves.
type Dir struct {
	path    string
	created bool

	mu sync.Mutex
	// owner: this master owns the shared files and removes them on exit.
	// A master started by an upgrade owns them once ready; one that hands
	// over to an upgrade no longer does.
	owner bool
}

// Prepare creates dir (0700) or checks the one there (ownDir),
// and claims it: it refuses a dir whose control socket still answers
// (another live instance) and clears files a dead instance left behind. A
// master started by an upgrade (inherited) shares the dir with its parent
// and claims nothing yet, but checks it all the same.
func Prepare(dir string, inherited bool) (*Dir, error) {
	rd := &Dir{path: dir, owner: !inherited}
	created, err := makeRuntimeDir(dir)
	if err != nil {
		return nil, err
	}
	rd.created = created || (inherited && os.Getenv(createdEnv) == "1")
	if err := ownDir(dir); err != nil {
		return nil, err
	}
	if inherited {
		return rd, nil
	}
	if c, err := net.DialTimeout("unix", rd.ControlSocket(), time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("runtime_dir %q is in use by a running supervisor (its control socket answers); stop it first or use another runtime_dir", dir)
	}
	socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
	for _, s := range socks {
		_ = os.Remove(s)
	}
	_ = os.Remove(control.PIDFile(dir))
	return rd, nil
}

// Path is the directory's path, as the config gave it.
func (rd *Dir) Path() string { return rd.path }

// ControlSocket is the path of the instance's control socket.
func (rd *Dir) ControlSocket() string { return control.SocketPath(rd.path) }

// SocketPrefix starts the name of every socket this master's workers use:
// its pid in base 36 (short paths) and a dot, so that during an upgrade
// two masters' worker sockets never collide and Cleanup removes only its
// own.
func SocketPrefix() string { return strconv.FormatInt(int64(os.Getpid()), 36) + "." }

// LetWorkersIn makes the directory traversable by others (0711: no
// listing), for workers that run as another user and reach each other's
// sockets by path; each socket stays 0600 and theirs. ownDir accepts
// 0711, so an upgraded master inherits such a dir.
func (rd *Dir) LetWorkersIn() error {
	if err := os.Chmod(rd.path, 0o711); err != nil {
		return fmt.Errorf("runtime_dir %q: let the workers' user reach its sockets (mode 0711): %w", rd.path, err)
	}
	return nil
}

// Own makes this master the owner of the shared files and writes its pid.
func (rd *Dir) Own() error {
	rd.mu.Lock()
	rd.owner = true
	rd.mu.Unlock()
	return writePIDFile(rd.path)
}

// Disown hands the shared files to the master that took over.
func (rd *Dir) Disown() {
	rd.mu.Lock()
	rd.owner = false
	rd.mu.Unlock()
}

// Cleanup removes this master's worker sockets; when it owns them, the
// control socket and the pid file; and the directory itself if this
// instance created it and nothing else is left in it.
func (rd *Dir) Cleanup() {
	mine, _ := filepath.Glob(filepath.Join(rd.path, SocketPrefix()+"*.sock"))
	for _, s := range mine {
		_ = os.Remove(s)
	}
	rd.mu.Lock()
	owner := rd.owner
	rd.mu.Unlock()
	if owner {
		_ = os.Remove(rd.ControlSocket())
		_ = os.Remove(control.PIDFile(rd.path))
	}
	// Whichever master of the instance leaves last finds the dir empty
	// (a serving master's control socket and pid file are in it).
	if rd.created {
		_ = os.Remove(rd.path) // fails harmlessly when not empty
	}
}

// createdEnv tells the master an upgrade starts that the instance created
// its runtime dir, so that the last master to leave removes it.
const createdEnv = "SUPERVISOR_RUNTIME_DIR_CREATED"

// HandOn records for the master an upgrade starts whether the dir was
// created by this instance.
func (rd *Dir) HandOn() {
	v := "0"
	if rd.created {
		v = "1"
	}
	os.Setenv(createdEnv, v)
}
