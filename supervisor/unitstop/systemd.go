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
	conn, err := connect(ctx)
	if err != nil {
		return Unit{}, err
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

// connect reaches systemd as systemctl does: as root through its private
// socket first, which needs no dbus-daemon, then through the system bus.
// go-systemd's NewWithContext tries the bus first, so a hung dbus-daemon
// would spend the whole context, leave the private socket an expired
// one, and only the private socket's error would be reported.
func connect(ctx context.Context) (*sddbus.Conn, error) {
	var private error
	if os.Geteuid() == 0 {
		conn, err := sddbus.NewSystemdConnectionContext(ctx)
		if err == nil {
			return conn, nil
		}
		private = fmt.Errorf("systemd's private socket /run/systemd/private: %w", err)
	}
	conn, err := sddbus.NewSystemConnectionContext(ctx)
	if err == nil {
		return conn, nil
	}
	bus := fmt.Errorf("the system bus ($DBUS_SYSTEM_BUS_ADDRESS, else /run/dbus/system_bus_socket): %w", err)
	if private != nil {
		return nil, fmt.Errorf("connect to systemd over D-Bus: %w; %w", private, bus)
	}
	return nil, fmt.Errorf("connect to systemd over D-Bus: %w", bus)
}
