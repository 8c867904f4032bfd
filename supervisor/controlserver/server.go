package controlserver

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

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
)

// Server serves the control socket. Stop and successful upgrade
// requests are answered only once this master has finished stopping
// (Finish), so `supervisor stop` returns when every worker is gone, and
// `supervisor upgrade` when the new master serves alone.
type Server struct {
	ln      net.Listener
	m       Master
	log     zerolog.Logger
	mu      sync.Mutex
	waiters []waiter
	wg      sync.WaitGroup
}

// Master is what the control socket asks of the master.
type Master interface {
	// Status is the master's report (`supervisor status`).
	Status() control.Status
	// Reload applies the config file again.
	Reload() control.OpResult
	// Upgrade starts the binary now on disk; nil once it took over.
	Upgrade() error
	// LastUpgrade is the last upgrade's outcome (nil: none yet).
	LastUpgrade() *control.OpResult
	// Stop stops the master; the server's Finish answers the stop.
	Stop()
	// ControlGroup is control_group in force ("": none).
	ControlGroup() string
}

// waiter is a client answered when the master has stopped.
type waiter struct {
	conn net.Conn
	resp control.Response
}

// New serves the control socket ln, listening at path (made by the
// master, or taken over from the master that started this one: upgrade),
// for m; Start starts answering.
func New(ln net.Listener, path string, m Master, log zerolog.Logger) (*Server, error) {
	if err := secureControlSocket(path, m.ControlGroup()); err != nil {
		ln.Close()
		return nil, err
	}
	return &Server{ln: ln, m: m, log: log}, nil
}

// Start starts accepting. A master started by an upgrade calls it only
// once it is ready: until then the previous master, which shares the
// socket, answers every command, so a stop sent during the upgrade reaches
// the master that can pass it on (the master's stopNewMaster) rather than one that
// would only abort the upgrade and leave the old master serving.
func (c *Server) Start() {
	c.wg.Add(1)
	go c.accept()
}

// secureControlSocket gives the control socket its owner and mode: 0600,
// or 0660 owned by control_group. The socket is a master's whole control
// surface (stop, reload, upgrade), so it is never world-accessible.
func secureControlSocket(path, g string) error {
	mode := os.FileMode(0o600)
	if g != "" {
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
func allowPeer(conn net.Conn, g string) error {
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
	if cred.Uid == 0 || int(cred.Uid) == os.Geteuid() || inControlGroup(cred, g) {
		return nil
	}
	return fmt.Errorf("permission denied: uid %d (pid %d) may not control this supervisor (allowed: root, uid %d, members of control_group)",
		cred.Uid, cred.Pid, os.Geteuid())
}

// inControlGroup reports whether the peer belongs to control_group, as
// its primary group or a supplementary one.
func inControlGroup(cred *unix.Ucred, g string) bool {
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

func (c *Server) accept() {
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

func (c *Server) serve(conn net.Conn) {
	defer c.wg.Done()
	// The request is read before a refused peer is answered: closing with
	// its bytes unread would reset the connection, and the client would
	// see a broken pipe instead of the reason.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var req control.Request
	decodeErr := json.NewDecoder(bufio.NewReader(conn)).Decode(&req)
	if err := allowPeer(conn, c.m.ControlGroup()); err != nil {
		c.log.Warn().Err(err).Msg("control socket: refused a peer")
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
		st := c.m.Status()
		respond(conn, control.Response{OK: true, Status: &st})
		conn.Close()
	case "reload":
		c.log.Info().Msg("reload requested on the control socket")
		res := c.m.Reload()
		respond(conn, control.Response{OK: res.OK, Error: res.Error, Result: &res})
		conn.Close()
	case "upgrade":
		c.log.Info().Msg("upgrade requested on the control socket")
		if err := c.m.Upgrade(); err != nil {
			res := c.m.LastUpgrade()
			respond(conn, control.Response{Error: err.Error(), Result: res})
			conn.Close()
			return
		}
		res := c.m.LastUpgrade()
		c.wait(conn, control.Response{OK: true, Result: res})
	case "stop":
		c.log.Info().Msg("stop requested on the control socket")
		c.wait(conn, control.Response{OK: true})
		c.m.Stop()
	default:
		respond(conn, control.Response{Error: fmt.Sprintf("unknown command %q (want status, reload, upgrade or stop)", req.Cmd)})
		conn.Close()
	}
}

// wait answers conn with resp once the master has stopped.
func (c *Server) wait(conn net.Conn, resp control.Response) {
	c.mu.Lock()
	c.waiters = append(c.waiters, waiter{conn, resp})
	c.mu.Unlock()
}

func respond(conn net.Conn, r control.Response) {
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_ = json.NewEncoder(conn).Encode(r)
}

// Finish answers the clients waiting for a stop.
func (c *Server) Finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.waiters {
		respond(w.conn, w.resp)
		w.conn.Close()
	}
	c.waiters = nil
}

// Close stops accepting and waits for open exchanges; clients waiting on a
// stop stay connected until Finish.
func (c *Server) Close() {
	c.ln.Close()
	c.wg.Wait()
}

// StopAccepting closes the listener only, as an upgrade that handed over
// does: new connections go to the new master; open exchanges and the
// clients waiting on a stop stay.
func (c *Server) StopAccepting() error { return c.ln.Close() }
