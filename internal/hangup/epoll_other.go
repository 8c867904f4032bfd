//go:build !linux

package hangup

import (
	"fmt"
	"runtime"
	"syscall"
)

// epoll is absent off Linux: New fails and callers poll PeerClosed.
type epoll struct{}

func (*epoll) open() error {
	return fmt.Errorf("%w: no epoll on %s", ErrUnwatchable, runtime.GOOS)
}
func (*epoll) add(syscall.RawConn, uint64) error { return ErrUnwatchable }
func (*epoll) del(syscall.RawConn)               {}
func (*epoll) wait(func(uint64))                 {}
