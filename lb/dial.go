package lb

import (
	"fmt"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// dialError marks a failure to connect to a backend's socket. fasthttp
// returns the Dial error unchanged, so finding one with errors.As proves the
// request never left the proxy and may safely be sent elsewhere.
type dialError struct {
	backend string
	socket  string
	err     error
}

func (e *dialError) Error() string {
	return fmt.Sprintf("dial backend %s at %q: %v", e.backend, e.socket, e.err)
}

func (e *dialError) Unwrap() error { return e.err }

// unixDialer returns a fasthttp dial function that ignores the address
// fasthttp passes (HostClient.Addr is only a label here) and connects to the
// backend's socket, bounded by the request's remaining time. The
// connection's deadlines are lazy (lazydeadline.go).
func unixDialer(name, socket string) fasthttp.DialFuncWithTimeout {
	return func(_ string, timeout time.Duration) (net.Conn, error) {
		conn, err := net.DialTimeout("unix", socket, timeout)
		if err != nil {
			return nil, &dialError{backend: name, socket: socket, err: err}
		}
		return &unsentOnWriteError{&lazyDeadlineConn{Conn: conn}}, nil
	}
}

// requestWriteError marks a failure to write the request to a backend. Workers
// are fasthttp servers, which read a whole request before acting on it, so
// a request whose bytes could not all be written was never run: it may be
// sent elsewhere. This is what a pooled keep-alive connection to a worker
// that has since died (EPIPE on a Unix socket) looks like.
type requestWriteError struct{ err error }

func (e *requestWriteError) Error() string { return "write request: " + e.err.Error() }
func (e *requestWriteError) Unwrap() error { return e.err }

// Timeout keeps fasthttp's timeout mapping (it turns write timeouts into
// ErrTimeout) working through the wrapper.
func (e *requestWriteError) Timeout() bool {
	t, ok := e.err.(interface{ Timeout() bool })
	return ok && t.Timeout()
}

// unsentOnWriteError tags write failures as requestWriteError (fasthttp returns
// them unchanged).
type unsentOnWriteError struct{ net.Conn }

func (c *unsentOnWriteError) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		err = &requestWriteError{err}
	}
	return n, err
}
