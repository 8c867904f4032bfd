package publictls

import (
	"crypto/tls"
	"fmt"
	"net"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/servertls"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// The public listeners' TLS (config tls): both the HTTP and the gRPC
// listener wrap the connections they accept in it, at serve time: their
// sockets are plain TCP, as an upgrade hands them over (tableflip), and
// under the connection caps, which count TCP connections (a connection
// over a cap is answered in plain text and closed before any handshake).
// The handshake is bounded as a request header is: by limits.read_timeout
// (fasthttp handshakes under its ReadTimeout; gRPC under its
// ConnectionTimeout, set to the same).

// Listeners is the public listeners' certificates; nil when tls is off,
// which wraps nothing.
type Listeners struct {
	tls *servertls.Reloader
	log zerolog.Logger
}

// Load loads cfg's certificates for the listeners (nil when tls is off).
func Load(cfg *config.Config, log zerolog.Logger) (*Listeners, error) {
	if !cfg.TLS.On() {
		return nil, nil
	}
	c, err := servertls.Load(cfg.TLS.Files())
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	m := &Listeners{tls: servertls.NewReloader(c), log: log}
	m.logTLS(c)
	return m, nil
}

// Reload re-reads cfg's certificate files (a renewed certificate may
// have been written over the same ones); apply puts them in force for
// new connections. Loading fails before anything changes.
func (m *Listeners) Reload(cfg *config.Config) (apply func(), err error) {
	if m == nil {
		return func() {}, nil
	}
	c, err := servertls.Load(cfg.TLS.Files())
	if err != nil {
		return nil, fmt.Errorf("the new config's TLS files do not load, the old config keeps serving: tls: %w", err)
	}
	return func() { m.tls.Set(c); m.logTLS(c) }, nil
}

func (m *Listeners) logTLS(c *servertls.Certs) {
	m.log.Info().Str("subject", c.Leaf().Subject.String()).Str("serial", c.Leaf().SerialNumber.String()).
		Time("not_after", c.Leaf().NotAfter).Bool("mutual", c.Mutual()).Msg("TLS certificate loaded for the public and gRPC listeners")
}

// HTTP wraps the public listener's accepted connections in TLS, when
// it is on.
func (m *Listeners) HTTP(ln net.Listener) net.Listener {
	if m == nil {
		return ln
	}
	return tls.NewListener(ln, m.tls.ServerConfig("http/1.1"))
}

// GRPC is the gRPC listener's TLS config; nil when off.
func (m *Listeners) GRPC() *tls.Config {
	if m == nil {
		return nil
	}
	return m.tls.ServerConfig("h2")
}

// Reloadable rejects a reload that turns TLS on or off: the listeners
// wrap their connections from startup. Changing the files, or adding or
// removing client_ca_file, reloads.
func Reloadable(old, cfg *config.Config) error {
	if old.TLS.On() != cfg.TLS.On() {
		return fmt.Errorf("tls: turning it on or off needs `supervisor upgrade` or a restart; nothing was changed")
	}
	return nil
}
