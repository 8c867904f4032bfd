package shm

import "fmt"

// State is a worker's lifecycle state as its slot records it.
type State uint64

// The zero State is Free: a slot nobody has claimed.
const (
	Free     State = iota // unclaimed
	Starting              // claimed by the master; the worker is booting
	Ready                 // serving
	Draining              // finishing in-flight requests, taking no new ones
	Stopping              // asked to exit
	Dead                  // exited; the master has not reused the slot yet
)

// String returns the lower-case name status prints, or "state(N)" for a
// value this version does not know.
func (s State) String() string {
	switch s {
	case Free:
		return "free"
	case Starting:
		return "starting"
	case Ready:
		return "ready"
	case Draining:
		return "draining"
	case Stopping:
		return "stopping"
	case Dead:
		return "dead"
	}
	return fmt.Sprintf("state(%d)", uint64(s))
}
