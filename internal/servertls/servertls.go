package servertls

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// Files name what a listener's TLS is loaded from.
type Files struct {
	// CertFile is the server's certificate chain (PEM, leaf first) and
	// KeyFile its private key (PEM).
	CertFile, KeyFile string
	// ClientCAFile, when set, is the CAs (PEM) that must sign every
	// client's certificate: mutual TLS.
	ClientCAFile string
}

// Certs are Files loaded.
type Certs struct {
	cert      *tls.Certificate
	clientCAs *x509.CertPool // nil: no client certificate asked
}

// FileError is a file that did not load: Field is the Files field
// (cert_file, key_file, client_ca_file) it is named by.
type FileError struct {
	Field, Path string
	Err         error
}

func (e *FileError) Error() string { return fmt.Sprintf("%s %q: %v", e.Field, e.Path, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// Load reads and parses f's files; an error is a *FileError naming the
// file at fault.
func Load(f Files) (*Certs, error) {
	certPEM, err := os.ReadFile(f.CertFile)
	if err != nil {
		return nil, &FileError{"cert_file", f.CertFile, err}
	}
	keyPEM, err := os.ReadFile(f.KeyFile)
	if err != nil {
		return nil, &FileError{"key_file", f.KeyFile, err}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The key file is at fault when the certificate parses.
		field, path := "key_file", f.KeyFile
		if !hasCert(certPEM) {
			field, path = "cert_file", f.CertFile
		}
		return nil, &FileError{field, path, fmt.Errorf("%w (want PEM: the certificate chain in cert_file, its private key in key_file)", err)}
	}
	c := &Certs{cert: &cert}
	if f.ClientCAFile != "" {
		pem, err := os.ReadFile(f.ClientCAFile)
		if err != nil {
			return nil, &FileError{"client_ca_file", f.ClientCAFile, err}
		}
		c.clientCAs = x509.NewCertPool()
		if !c.clientCAs.AppendCertsFromPEM(pem) {
			return nil, &FileError{"client_ca_file", f.ClientCAFile, errors.New("no PEM certificate in it")}
		}
	}
	return c, nil
}

// hasCert reports whether pemBytes holds a certificate that parses.
func hasCert(pemBytes []byte) bool {
	for {
		var block *pem.Block
		block, pemBytes = pem.Decode(pemBytes)
		if block == nil {
			return false
		}
		if block.Type == "CERTIFICATE" {
			_, err := x509.ParseCertificate(block.Bytes)
			return err == nil
		}
	}
}

// Leaf is the server certificate's leaf (for logs and tests).
func (c *Certs) Leaf() *x509.Certificate { return c.cert.Leaf }

// Mutual reports whether client certificates are required.
func (c *Certs) Mutual() bool { return c.clientCAs != nil }

// Reloader holds the Certs in force for every config it built.
type Reloader struct {
	cur atomic.Pointer[Certs]
}

// NewReloader returns a Reloader serving c.
func NewReloader(c *Certs) *Reloader {
	r := &Reloader{}
	r.cur.Store(c)
	return r
}

// Set puts c in force for the handshakes from now on; established
// connections keep theirs.
func (r *Reloader) Set(c *Certs) { r.cur.Store(c) }

// CipherSuites are the TLS 1.2 suites offered: ECDHE key exchange and
// AEAD ciphers only.
var CipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// ServerConfig is a listener's server config, negotiating nextProtos by
// ALPN ("h2" for gRPC, "http/1.1" for HTTP): each handshake gets the
// Certs in force then.
func (r *Reloader) ServerConfig(nextProtos ...string) *tls.Config {
	type built struct {
		from *Certs
		cfg  *tls.Config
	}
	var cache atomic.Pointer[built]
	base := &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: CipherSuites, NextProtos: nextProtos}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := r.cur.Load()
		if b := cache.Load(); b != nil && b.from == c {
			return b.cfg, nil
		}
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: CipherSuites, NextProtos: nextProtos,
			Certificates: []tls.Certificate{*c.cert}}
		if c.clientCAs != nil {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
			cfg.ClientCAs = c.clientCAs
		}
		cache.Store(&built{c, cfg})
		return cfg, nil
	}
	return base
}
