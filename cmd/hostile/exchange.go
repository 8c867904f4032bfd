package main

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"time"
)

// exchange plays one hostile request on a fresh connection: it writes
// part(0), part(1), ... with gap between them until part returns nil or
// the server answers or closes, then waits for the answer. The outcome is
// the status code, or outcomeCut, outcomeHeld (ctx ended first) or
// outcomeRefused.
func exchange(ctx context.Context, addr string, part func(i int) []byte, gap time.Duration) string {
	conn, failed := dial(ctx, addr)
	if conn == nil {
		return failed
	}
	defer conn.Close()
	// The end of the phase unblocks every read and write at once.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	answered := make(chan string, 1)
	go func() { answered <- readStatus(ctx, conn) }()
	for i := 0; ; i++ {
		p := part(i)
		if p == nil {
			break
		}
		if _, err := conn.Write(p); err != nil {
			break // closed: the reader says how
		}
		if gap == 0 {
			continue
		}
		select {
		case out := <-answered:
			return out
		case <-time.After(gap):
		}
	}
	return <-answered
}

// dial opens a connection to addr, or says why not: outcomeHeld (ctx
// ended first) or outcomeRefused.
func dial(ctx context.Context, addr string) (net.Conn, string) {
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, outcomeHeld
		}
		return nil, outcomeRefused
	}
	return conn, ""
}

// readStatus reads the status line of the server's answer.
func readStatus(ctx context.Context, conn net.Conn) string {
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err == nil {
		if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[0], "HTTP/") {
			return f[1]
		}
		return "garbage"
	}
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return outcomeHeld
	}
	return outcomeCut
}

// once returns b for the first part and nil after: a request sent whole.
func once(b []byte) func(int) []byte {
	return func(i int) []byte {
		if i == 0 {
			return b
		}
		return nil
	}
}
