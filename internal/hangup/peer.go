package hangup

import (
	"errors"
	"net"
	"syscall"
)

// PeerClosed reports whether conn's peer has closed it: a peek without
// waiting reads end of file, or fails with ECONNRESET (the peer reset it:
// a process killed with bytes it had not read), an error the kernel
// reports once, to this peek, when the next would read end of file.
// Pending bytes or nothing to read yet mean it is open; a connection that
// cannot be asked is taken as open. It is the polling form of Watch, for
// a connection Watch cannot register, and costs one non-blocking syscall.
func PeerClosed(conn net.Conn) bool {
	raw, err := rawConn(conn)
	if err != nil {
		return false
	}
	closed := false
	var buf [1]byte
	_ = raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil || errors.Is(err, syscall.ECONNRESET)
		return true // one try; never wait
	})
	return closed
}

// Peer is the peer of a connection a handler owns, as a proxy watches
// the client it forwards for (lb.Client): Watch registers the connection
// with the process's Watcher (Default), Gone peeks (PeerClosed) when it
// cannot.
type Peer struct{ Conn net.Conn }

// Watch calls onGone once when the peer hangs up (Watcher.Watch on
// Default).
func (p Peer) Watch(onGone func()) (cancel func(), err error) {
	w, err := Default()
	if err != nil {
		return nil, err
	}
	return w.Watch(p.Conn, onGone)
}

// Gone reports whether the peer has closed the connection (PeerClosed).
func (p Peer) Gone() bool { return PeerClosed(p.Conn) }
