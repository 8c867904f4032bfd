package workers

import (
	"fmt"
	"os"
	"syscall"

	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// Credentials are the user and group workers run as; nil keeps the
// master's. The master stays root: it owns the listeners, the runtime dir
// and placement, and upgrades re-execute it; workers, which parse
// untrusted input, drop to an unprivileged user before their first
// instruction (the kernel switches ids in the forked child before exec).
type Credentials struct {
	uid, gid int
}

// lookupCredentials resolves workers.user and workers.group
// (config.LookupCredentials); nil without a user.
func lookupCredentials(userName, groupName string) (*Credentials, error) {
	c, err := config.LookupCredentials(userName, groupName)
	if err != nil || c == nil {
		return nil, err
	}
	return &Credentials{uid: c.UID, gid: c.GID}, nil
}

// WorkerCredentials are the config's Credentials, checked against the
// master's own: switching users needs root.
func WorkerCredentials(cfg *config.Config) (*Credentials, error) {
	c, err := lookupCredentials(cfg.Workers.User, cfg.Workers.Group)
	if err != nil || c == nil {
		return c, err
	}
	if os.Geteuid() != 0 && (c.uid != os.Geteuid() || c.gid != os.Getegid()) {
		return nil, fmt.Errorf("workers.user %q: only a master running as root can start workers as another user", cfg.Workers.User)
	}
	return c, nil
}

// sysProcAttr is what starts a worker with these Credentials: the user,
// the group, and no supplementary groups but that one.
func (c *Credentials) credential() *syscall.Credential {
	if c == nil {
		return nil
	}
	return &syscall.Credential{Uid: uint32(c.uid), Gid: uint32(c.gid), Groups: []uint32{uint32(c.gid)}}
}

// chown gives a file the workers need to use (their sockets, the
// scoreboard) to the workers' user; no-op without Credentials.
func (c *Credentials) Chown(path string) error {
	if c == nil {
		return nil
	}
	if err := os.Chown(path, c.uid, c.gid); err != nil {
		return fmt.Errorf("give %s to the workers' user: %w", path, err)
	}
	return nil
}

// IDs are the workers' user and group ids.
func (c *Credentials) IDs() (uid, gid int) { return c.uid, c.gid }

// owns says whether fi belongs to the workers' user already.
func (c *Credentials) owns(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == c.uid && int(st.Gid) == c.gid
}
