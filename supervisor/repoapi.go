package supervisor

import (
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/repository"
)

// repositoryMaster is what the repository API (supervisor/repository)
// drives: its loads and unloads are reloads through the reload queue.
type repositoryMaster struct{ m *Master }

var _ repository.Master = repositoryMaster{}

func (r repositoryMaster) Reload() control.OpResult          { return r.m.Reload() }
func (r repositoryMaster) Config() *config.Config            { return r.m.cfg() }
func (r repositoryMaster) ModelStates() []control.ModelState { return r.m.modelStates() }
func (r repositoryMaster) Stopping() bool                    { return r.m.phase.Load().Stopping() }
func (r repositoryMaster) Unready() bool                     { return !r.m.phase.Load().AcceptsChanges() }

// loadConfig reads the file for a reload and makes the config to serve
// from it and the repository API's state; the reload commits that state
// (repo.Commit) once it stores the config.
func (m *Master) loadConfig() (*config.Config, error) {
	file, err := m.opts.Load()
	if err != nil {
		return nil, err
	}
	return m.repo.Plan(file), nil
}
