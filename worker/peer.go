package worker

import (
	"net"

	"github.com/supervisor-dev/supervisor/internal/hangup"
)

// PeerClosed reports whether conn's peer has closed it (hangup.PeerClosed:
// end of file or a reset; pending bytes or nothing yet mean open). A
// worker asks it of the connection a request came on to learn that nobody
// waits for the answer any more: fasthttp's RequestCtx.Done fires only at
// server shutdown, and the side that gives up (the master, a prep worker's
// fasthttp client at its deadline) closes its connection.
func PeerClosed(conn net.Conn) bool { return hangup.PeerClosed(conn) }
