package supervisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// controlServer serves the control socket. Stop and successful upgrade
// requests are answered only once this master has finished stopping
// (finish), so `supervisor stop` returns when every worker is gone, and
// `supervisor upgrade` when the new master serves alone.
type controlServer struct {
	ln      net.Listener
	m       *Master
	mu      sync.Mutex
	waiters []waiter
	wg      sync.WaitGroup
}

// waiter is a client answered when the master has stopped.
type waiter struct {
	conn net.Conn
	resp control.Response
}

// startControl listens on the control socket, or takes it over from the
// master that started this one (upgrade); start starts answering.
func (m *Master) startControl(path string) (*controlServer, error) {
	ln, err := m.opts.Upgrader.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket %q: %w", path, err)
	}
	if err := m.secureControlSocket(path); err != nil {
		ln.Close()
		return nil, err
	}
	return &controlServer{ln: ln, m: m}, nil
}

// start starts accepting. A master started by an upgrade calls it only
// once it is ready: until then the previous master, which shares the
// socket, answers every command, so a stop sent during the upgrade reaches
// the master that can pass it on (stopNewMaster) rather than one that
// would only abort the upgrade and leave the old master serving.
func (c *controlServer) start() {
	c.wg.Add(1)
	go c.accept()
}

// secureControlSocket gives the control socket its owner and mode: 0600,
// or 0660 owned by control_group. The socket is a master's whole control
// surface (stop, reload, upgrade), so it is never world-accessible.
func (m *Master) secureControlSocket(path string) error {
	mode := os.FileMode(0o600)
	if g := m.cfg().ControlGroup; g != "" {
		gid, err := config.LookupGroup(g)
		if err != nil {
			return fmt.Errorf("control_group: %w", err)
		}
		if err := os.Chown(path, -1, gid); err != nil {
			return fmt.Errorf("control socket %q: %w", path, err)
		}
		mode = 0o660
	}
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("control socket %q: %w", path, err)
	}
	return nil
}

// allowPeer checks the connecting process's credentials (SO_PEERCRED):
// root, the master's own user and members of control_group may control
// the master. The socket's mode already says the same; this holds even if
// the file's mode was loosened by hand.
func (m *Master) allowPeer(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return fmt.Errorf("read peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return fmt.Errorf("read peer credentials: %v", errors.Join(err, credErr))
	}
	if cred.Uid == 0 || int(cred.Uid) == os.Geteuid() || m.inControlGroup(cred) {
		return nil
	}
	return fmt.Errorf("permission denied: uid %d (pid %d) may not control this supervisor (allowed: root, uid %d, members of control_group)",
		cred.Uid, cred.Pid, os.Geteuid())
}

// inControlGroup reports whether the peer belongs to control_group, as
// its primary group or a supplementary one.
func (m *Master) inControlGroup(cred *unix.Ucred) bool {
	g := m.cfg().ControlGroup
	if g == "" {
		return false
	}
	gid, err := config.LookupGroup(g)
	if err != nil {
		return false
	}
	if int(cred.Gid) == gid {
		return true
	}
	u, err := user.LookupId(strconv.Itoa(int(cred.Uid)))
	if err != nil {
		return false
	}
	ids, _ := u.GroupIds()
	return slices.Contains(ids, strconv.Itoa(gid))
}

func (c *controlServer) accept() {
	defer c.wg.Done()
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.wg.Add(1)
		go c.serve(conn)
	}
}

func (c *controlServer) serve(conn net.Conn) {
	defer c.wg.Done()
	// The request is read before a refused peer is answered: closing with
	// its bytes unread would reset the connection, and the client would
	// see a broken pipe instead of the reason.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var req control.Request
	decodeErr := json.NewDecoder(bufio.NewReader(conn)).Decode(&req)
	if err := c.m.allowPeer(conn); err != nil {
		c.m.log.Warn().Err(err).Msg("control socket: refused a peer")
		respond(conn, control.Response{Error: err.Error()})
		conn.Close()
		return
	}
	if decodeErr != nil {
		respond(conn, control.Response{Error: "bad control request: " + decodeErr.Error()})
		conn.Close()
		return
	}
	switch req.Cmd {
	case "status":
		st := c.m.status()
		respond(conn, control.Response{OK: true, Status: &st})
		conn.Close()
	case "reload":
		c.m.log.Info().Msg("reload requested on the control socket")
		res := c.m.Reload()
		respond(conn, control.Response{OK: res.OK, Error: res.Error, Result: &res})
		conn.Close()
	case "upgrade":
		c.m.log.Info().Msg("upgrade requested on the control socket")
		if err := c.m.Upgrade(); err != nil {
			_, res := c.m.history.last()
			respond(conn, control.Response{Error: err.Error(), Result: res})
			conn.Close()
			return
		}
		_, res := c.m.history.last()
		c.wait(conn, control.Response{OK: true, Result: res})
	case "stop":
		c.m.log.Info().Msg("stop requested on the control socket")
		c.wait(conn, control.Response{OK: true})
		c.m.Stop()
	default:
		respond(conn, control.Response{Error: fmt.Sprintf("unknown command %q (want status, reload, upgrade or stop)", req.Cmd)})
		conn.Close()
	}
}

// wait answers conn with resp once the master has stopped.
func (c *controlServer) wait(conn net.Conn, resp control.Response) {
	c.mu.Lock()
	c.waiters = append(c.waiters, waiter{conn, resp})
	c.mu.Unlock()
}

func respond(conn net.Conn, r control.Response) {
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_ = json.NewEncoder(conn).Encode(r)
}

// finish answers the clients waiting for a stop.
func (c *controlServer) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.waiters {
		respond(w.conn, w.resp)
		w.conn.Close()
	}
	c.waiters = nil
}

// close stops accepting and waits for open exchanges; clients waiting on a
// stop stay connected until finish.
func (c *controlServer) close() {
	c.ln.Close()
	c.wg.Wait()
}
