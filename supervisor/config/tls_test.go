package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// selfSigned writes a self-signed certificate and its key (PEM) to dir
// and returns their paths.
func selfSigned(t *testing.T, dir, name string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(k)
	cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600) != nil ||
		os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600) != nil {
		t.Fatal("cannot write the test certificate")
	}
	return cert, key
}

func TestConfigTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir, "server")
	otherCert, otherKey := selfSigned(t, dir, "other")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	c := mustParseConfig(t, "tls:\n  cert_file: "+cert+"\n  key_file: "+key+"\n  client_ca_file: "+otherCert+"\n", "t.yaml")
	if !c.TLS.On() || c.TLS.ClientCAFile != otherCert {
		t.Errorf("parsed %+v", c.TLS)
	}
	if d := mustParseConfig(t, "listen: 127.0.0.1:9000\n", "t.yaml"); d.TLS.On() {
		t.Errorf("TLS on by default: %+v", d.TLS)
	}
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"key without cert", "tls:\n  key_file: " + key + "\n",
			[]string{`t.yaml:1: tls.cert_file: is not set but tls.key_file or tls.client_ca_file is`}},
		{"cert without key", "tls:\n  cert_file: " + cert + "\n",
			[]string{`t.yaml:1: tls.key_file: is not set: TLS needs the certificate's private key (PEM)`}},
		{"missing cert", "tls:\n  cert_file: " + missing + "\n  key_file: " + key + "\n",
			[]string{`t.yaml:2: tls.cert_file: cert_file "` + missing + `": open ` + missing + `: no such file or directory`}},
		{"cert not PEM", "tls:\n  cert_file: " + garbage + "\n  key_file: " + key + "\n",
			[]string{`t.yaml:2: tls.cert_file: cert_file "` + garbage + `": tls: failed to find any PEM data in certificate input`}},
		{"key not the cert's", "tls:\n  cert_file: " + cert + "\n  key_file: " + otherKey + "\n",
			[]string{`t.yaml:3: tls.key_file: key_file "` + otherKey + `": tls: private key does not match public key`}},
		{"CA file without a certificate", "tls:\n  cert_file: " + cert + "\n  key_file: " + key + "\n  client_ca_file: " + key + "\n",
			[]string{`t.yaml:4: tls.client_ca_file: client_ca_file "` + key + `": no PEM certificate in it`}},
		{"unknown key", "tls:\n  ca_file: x\n",
			[]string{`t.yaml:2: unknown key "ca_file" in tls (known keys: cert_file, key_file, client_ca_file)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml), "t.yaml")
			checkConfigErrors(t, err, tt.want)
		})
	}
}
