package config

import (
	"errors"

	"gopkg.in/yaml.v3"

	"github.com/supervisor-dev/supervisor/internal/servertls"
)

// TLSConfig is the TLS of both public listeners, the HTTP one (listen)
// and the gRPC one (grpc.listen), which share the one certificate; the
// metrics listener stays plain. Unset (no cert_file), both are plain.
// The files are read at startup and again at every reload, so a renewed
// certificate written over the old files is served from the next
// connection on, with established connections untouched (internal/servertls).
type TLSConfig struct {
	// CertFile is the server's certificate chain (PEM, leaf first).
	CertFile string `yaml:"cert_file"`
	// KeyFile is its private key (PEM).
	KeyFile string `yaml:"key_file"`
	// ClientCAFile, when set, turns on mutual TLS: every client must
	// present a certificate signed by one of these CAs (PEM), or its
	// handshake is refused (Triton's --grpc-use-ssl-mutual, here on both
	// listeners).
	ClientCAFile string `yaml:"client_ca_file"`
}

// On reports whether the public listeners serve TLS.
func (t TLSConfig) On() bool { return t.CertFile != "" }

// Files are what servertls loads.
func (t TLSConfig) Files() servertls.Files {
	return servertls.Files{CertFile: t.CertFile, KeyFile: t.KeyFile, ClientCAFile: t.ClientCAFile}
}

// tlsKeys decode the tls section.
func (d *configDecoder) tlsKeys(c *Config) configKey {
	return configKey{"tls", func(n *yaml.Node, field string) { d.mapping(n, field, d.fieldKeys(&c.TLS)) }}
}

// tls validates the tls section: its files must load (a missing file,
// a certificate or key that does not parse, a key that is not the
// certificate's, a CA file with no certificate are each an error naming
// the key and the file).
func (v *configValidator) tls(t TLSConfig) {
	switch {
	case t.CertFile == "" && t.KeyFile == "" && t.ClientCAFile == "":
		return
	case t.CertFile == "":
		v.errorf("tls.cert_file", "is not set but tls.key_file or tls.client_ca_file is: TLS needs the certificate (PEM), or remove the tls section for plain listeners")
		return
	case t.KeyFile == "":
		v.errorf("tls.key_file", "is not set: TLS needs the certificate's private key (PEM)")
		return
	}
	if _, err := servertls.Load(t.Files()); err != nil {
		var fe *servertls.FileError
		if errors.As(err, &fe) {
			v.errorf("tls."+fe.Field, "%v", err)
		} else {
			v.errorf("tls", "%v", err)
		}
	}
}
