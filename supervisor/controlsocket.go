package supervisor

import (
	"fmt"

	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/controlserver"
)

// startControl listens on the control socket, or takes it over from the
// master that started this one (upgrade); Start starts answering.
func (m *Master) startControl(path string) (*controlserver.Server, error) {
	ln, err := m.opts.Upgrader.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket %q: %w", path, err)
	}
	return controlserver.New(ln, path, controlMaster{m}, m.log)
}

// controlMaster is the master as the control socket sees it.
type controlMaster struct{ *Master }

var _ controlserver.Master = controlMaster{}

func (c controlMaster) Status() control.Status { return c.status() }

func (c controlMaster) LastUpgrade() *control.OpResult {
	_, res := c.history.last()
	return res
}

func (c controlMaster) ControlGroup() string { return c.cfg().ControlGroup }
