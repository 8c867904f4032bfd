package supervisor

// stopper is a listener whose socket can be shut down for good
// (internal/listenstop): front.Listener, *listenstop.Listener.
type stopper interface{ StopListening() error }

// stopSocket shuts ln's socket down (a nil *listenstop.Listener, a
// listener turned off, does nothing). A failure is logged: the socket then listens until the master
// exits, and connections made meanwhile are reset then.
func (m *Master) stopSocket(what string, ln stopper) {
	if err := ln.StopListening(); err != nil {
		m.log.Warn().Err(err).Str("listener", what).Msg("new connections wait until the master exits, then are reset")
	}
}
