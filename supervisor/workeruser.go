package supervisor

import (
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/workers"
)

// dropWorkerPrivileges sets up workers.user: the spawner starts workers
// as that user, the runtime dir lets them reach each other's sockets by
// path (0711: no listing; each socket is 0600 and theirs), and the
// scoreboard becomes theirs to write.
func (m *Master) dropWorkerPrivileges(cfg *config.Config) error {
	creds, err := workers.WorkerCredentials(cfg)
	if err != nil || creds == nil {
		return err
	}
	m.spawner.Creds = creds
	if err := m.rd.LetWorkersIn(); err != nil {
		return err
	}
	if err := m.board.SetOwner(creds.Chown); err != nil {
		return err
	}
	if err := m.caches.SetOwner(creds.Chown); err != nil {
		return err
	}
	uid, gid := creds.IDs()
	m.log.Info().Int("uid", uid).Int("gid", gid).Msg("workers run unprivileged")
	return nil
}
