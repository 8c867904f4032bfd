package prep

import (
	"runtime"
	"time"
)

// decodeGate bounds how many images one prep worker decodes at once to
// its CPUs (GOMAXPROCS, which the worker sets to the size of its cpuset).
// Decoding is CPU-bound, so more at once would only share the same CPUs
// more thinly, while each decode holds up to 4 bytes × max_pixels of
// memory: with the gate a worker's decode memory is bounded by its CPUs,
// not by how many requests a client opens at once.
type decodeGate chan struct{}

func newDecodeGate() decodeGate { return make(decodeGate, max(runtime.GOMAXPROCS(0), 1)) }

// gatePoll is how often a request waiting at the gate asks its stopper
// whether its client still waits.
const gatePoll = 20 * time.Millisecond

// enter waits for a place, giving up with the stopper's error when the
// client has gone; nil means entered, and the caller must leave. A nil
// gate admits everyone.
func (g decodeGate) enter(stop stopper) error {
	if g == nil {
		return nil
	}
	select {
	case g <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTicker(gatePoll)
	defer t.Stop()
	for {
		select {
		case g <- struct{}{}:
			return nil
		case <-t.C:
			if err := stop.check(); err != nil {
				return err
			}
		}
	}
}

func (g decodeGate) leave() {
	if g != nil {
		<-g
	}
}
