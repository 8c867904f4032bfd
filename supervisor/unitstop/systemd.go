package unitstop

import (
	"context"
	"fmt"
	"os"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
)

// Systemd is the Source of a process started by systemd: it asks systemd
// over D-Bus which unit holds PID and reads that unit's TimeoutStopUSec
// (org.freedesktop.systemd1.Service).
type Systemd struct {
	// Getenv reads the environment; nil is os.Getenv.
	Getenv func(string) string
	// PID is the process whose unit is read; 0 is this one.
	PID int
}

var _ Source = Systemd{}

// Unit implements Source. Without $INVOCATION_ID and $NOTIFY_SOCKET (set
// by systemd for the services it starts) it returns ErrNotUnderSystemd.
func (s Systemd) Unit(ctx context.Context) (Unit, error) {
	getenv, pid := s.Getenv, s.PID
	if getenv == nil {
		getenv = os.Getenv
	}
	if pid == 0 {
		pid = os.Getpid()
	}
	if getenv("INVOCATION_ID") == "" && getenv("NOTIFY_SOCKET") == "" {
		return Unit{}, ErrNotUnderSystemd
	}
	conn, err := sddbus.NewWithContext(ctx)
	if err != nil {
		return Unit{}, fmt.Errorf("connect to systemd over D-Bus (system bus, then /run/systemd/private as root): %w", err)
	}
	defer conn.Close()
	name, err := conn.GetUnitNameByPID(ctx, uint32(pid))
	if err != nil {
		return Unit{}, fmt.Errorf("ask systemd for the unit of pid %d: %w", pid, err)
	}
	prop, err := conn.GetServicePropertyContext(ctx, name, "TimeoutStopUSec")
	if err != nil {
		return Unit{}, fmt.Errorf("read TimeoutStopUSec of %q: %w", name, err)
	}
	us, ok := prop.Value.Value().(uint64)
	if !ok {
		return Unit{}, fmt.Errorf("TimeoutStopUSec of %q is %s, want a uint64", name, prop.Value.Signature())
	}
	return Unit{Name: name, TimeoutStop: fromUSec(us)}, nil
}
