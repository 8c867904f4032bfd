package sysshm

import (
	"fmt"
	"runtime/debug"
)

// ReadAt copies len(dst) bytes of the region from off (relative to the
// region's offset) into dst, from the master's mapping (the poison
// quarantine's key, Pending.Splice; the workers read with Reader): 400 when they are not all inside the
// region, or when the object was unlinked or truncated under the server.
func (g *Region) ReadAt(dst []byte, off uint64) error {
	src, err := g.span(off, uint64(len(dst)))
	if err != nil {
		return err
	}
	return g.guardedCopy(dst, src)
}

// span is the region's n bytes from off, once the object has been
// checked again (check: still linked, still large enough).
func (g *Region) span(off, n uint64) ([]byte, error) {
	if off > g.ByteSize || n > g.ByteSize-off {
		return nil, badRequest("shared memory region %q: %d bytes from offset %d do not fit its %d bytes", g.Name, n, off, g.ByteSize)
	}
	if err := g.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGone, err)
	}
	start := g.base + int(off)
	return g.mem[start : start+int(n)], nil
}

// guardedCopy copies src to dst, one of them in the mapping, containing
// a fault: an object truncated after check makes the copy touch pages
// past its end (SIGBUS), which debug.SetPanicOnFault turns into a panic
// of this goroutine, recovered here as a 400.
func (g *Region) guardedCopy(dst, src []byte) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %w", ErrGone, &Error{Status: 400,
				Msg: fmt.Sprintf("shared memory region %q: its object %q was truncated while the server copied it (%v); create it again and register it again", g.Name, g.Key, p)})
		}
	}()
	copy(dst, src)
	return nil
}
