package lb

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
)

// HeaderRequestID is the header that correlates a client request with the
// worker's logs. The proxy forwards the client's value or generates one, and
// echoes it on every response, errors included.
const HeaderRequestID = "X-Request-Id"

// idBufSize fits a generated id (16 hex + '-' + up to 16 hex) and most client
// ids, so the id usually lives on the stack.
const idBufSize = 64

// requestIDs generates ids unique within the process lifetime of a Proxy and,
// thanks to the random prefix, across Proxies and restarts.
type requestIDs struct {
	prefix [16]byte // hex of 8 random bytes
	seq    atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var raw [8]byte
	// crypto/rand.Read never fails on Linux (getrandom); a zero prefix would
	// still give ids unique within this Proxy.
	_, _ = rand.Read(raw[:])
	g := &requestIDs{}
	hex.Encode(g.prefix[:], raw[:])
	return g
}

// next appends a fresh id to dst without allocating.
func (g *requestIDs) next(dst []byte) []byte {
	dst = append(dst, g.prefix[:]...)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, g.seq.Add(1), 16)
}
