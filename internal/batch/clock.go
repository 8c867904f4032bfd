package batch

import "time"

// clock is the time source of the queue delay and the statistics; tests
// swap in a fake one so that delay expiry is an event they control rather
// than a race they time.
type clock interface {
	Now() time.Time
	// After delivers on the channel once d has passed.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
