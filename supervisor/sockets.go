package supervisor

// stopper is a listener whose socket can be shut down for good
// (internal/listenstop): front.Listener, *listenstop.Listener.
type stopper interface{ StopListening() error }

// mayStopSockets says whether a stop may shut the listening sockets down
// (internal/listenstop) rather than only close this master's descriptors.
// Not while an upgrade hands them over or after it did (handingOver): they
// are, or will be, the new master's. Not in a master started by an upgrade
// until it took over (tookOver): one that fails to boot exits while its
// parent still serves on the same sockets.
func (m *Master) mayStopSockets() bool {
	return !m.handingOver.Load() && (m.tookOver.Load() || !m.opts.Upgrader.HasParent())
}

// stopSocket shuts ln's socket down (a nil *listenstop.Listener, a
// listener turned off, does nothing). A failure is logged: the socket then listens until the master
// exits, and connections made meanwhile are reset then.
func (m *Master) stopSocket(what string, ln stopper) {
	if err := ln.StopListening(); err != nil {
		m.log.Warn().Err(err).Str("listener", what).Msg("new connections wait until the master exits, then are reset")
	}
}
