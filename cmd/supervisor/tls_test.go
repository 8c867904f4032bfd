package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf for 127.0.0.1 (server) or a client; it returns its
// certificate and key, PEM.
func (ca *testCA) issue(t *testing.T, serial int64, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsClient is an HTTPS client trusting roots, presenting cert if any,
// keeping one connection alive.
func tlsClient(roots *x509.CertPool, cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{RootCAs: roots}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, MaxIdleConnsPerHost: 1}}
}

const mlpJSON = `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}]}`

// httpsInfer posts an infer to the MLP with c; it returns the status (0
// with the error when no answer came), the server leaf's serial and
// whether the connection was reused.
func httpsInfer(t *testing.T, c *http.Client, url string) (code int, serial int64, reused bool, err error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v2/models/mlp/infer", strings.NewReader(mlpJSON))
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}))
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, false, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, 0, false, err
	}
	return resp.StatusCode, resp.TLS.PeerCertificates[0].SerialNumber.Int64(), reused, nil
}

func grpcTLSInfer(t *testing.T, addr string, cfg *tls.Config) (*grpc.ClientConn, error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, grpcInferOn(conn)
}

func grpcInferOn(conn *grpc.ClientConn) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := pb.NewGRPCInferenceServiceClient(conn).ModelInfer(ctx, mlpRequest("tls", seq(16, 1)))
	if err == nil && len(r.RawOutputContents) != 1 {
		return &net.AddrError{Err: "no output", Addr: conn.Target()}
	}
	return err
}

// TestTLS serves HTTPS and gRPC over TLS from one certificate, refuses
// plain clients, old TLS versions and weak suites, then reloads a new
// certificate and a client CA (mutual TLS): connections established
// before the reload keep working on the old session, new ones see the
// new certificate and must present a client certificate.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA := newTestCA(t, "server CA"), newTestCA(t, "client CA")
	certFile, keyFile, caFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "clients.pem")
	cert1, key1 := serverCA.issue(t, 1, true)
	writeFile(t, certFile, cert1)
	writeFile(t, keyFile, key1)
	writeFile(t, caFile, clientCA.pem)
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.cert)
	tlsSection := "tls:\n  cert_file: " + certFile + "\n  key_file: " + keyFile + "\n"
	keepAlive := tlsClient(roots, nil)
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}, https: keepAlive, extra: tlsSection})
	hostPort := strings.TrimPrefix(in.url, "https://")

	code, serial, _, err := httpsInfer(t, keepAlive, in.url)
	if err != nil || code != http.StatusOK || serial != 1 {
		t.Fatalf("HTTPS infer: %d, serial %d, %v; want 200 from serial 1", code, serial, err)
	}
	t.Run("plain HTTP refused", func(t *testing.T) {
		resp, err := httpClient.Get("http://" + hostPort + "/v2/health/live")
		if err == nil {
			resp.Body.Close()
			t.Fatalf("plain HTTP to the TLS port answered %d", resp.StatusCode)
		}
	})
	t.Run("TLS 1.1 refused", func(t *testing.T) {
		c, err := tls.Dial("tcp", hostPort, &tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS11})
		if err == nil {
			c.Close()
			t.Fatal("a TLS 1.1 handshake succeeded")
		}
	})
	t.Run("CBC suite refused", func(t *testing.T) {
		c, err := tls.Dial("tcp", hostPort, &tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS12,
			CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}})
		if err == nil {
			c.Close()
			t.Fatal("a TLS 1.2 handshake with ECDHE-ECDSA-AES128-SHA (CBC) succeeded")
		}
	})
	grpcKept, err := grpcTLSInfer(t, in.grpcAddr, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatalf("gRPC over TLS: %v", err)
	}
	t.Run("plain gRPC refused", func(t *testing.T) {
		conn, err := grpc.NewClient(in.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := grpcInferOn(conn); err == nil {
			t.Fatal("a plaintext gRPC client was served by the TLS listener")
		}
	})

	// Reload: a new certificate over the same files, and mutual TLS.
	cert2, key2 := serverCA.issue(t, 2, true)
	writeFile(t, certFile, cert2)
	writeFile(t, keyFile, key2)
	cfg, err := os.ReadFile(in.config)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, in.config, []byte(strings.Replace(string(cfg), tlsSection, tlsSection+"  client_ca_file: "+caFile+"\n", 1)))
	if out, err := in.cli("reload"); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	code, serial, reused, err := httpsInfer(t, keepAlive, in.url)
	if err != nil || code != http.StatusOK || serial != 1 || !reused {
		t.Fatalf("after the reload, the kept-alive connection: %d, serial %d, reused %v, %v; want 200 on the same connection (serial 1)", code, serial, reused, err)
	}
	if err := grpcInferOn(grpcKept); err != nil {
		t.Fatalf("after the reload, the established gRPC connection: %v", err)
	}
	if code, _, _, err := httpsInfer(t, tlsClient(roots, nil), in.url); err == nil {
		t.Fatalf("mutual TLS: a new connection without a client certificate was answered %d", code)
	}
	if _, err := grpcTLSInfer(t, in.grpcAddr, &tls.Config{RootCAs: roots}); err == nil {
		t.Fatal("mutual TLS: a gRPC client without a certificate was served")
	}
	// A certificate from another CA is refused too.
	otherPEM, otherKey := serverCA.issue(t, 9, false)
	other, err := tls.X509KeyPair(otherPEM, otherKey)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _, err := httpsInfer(t, tlsClient(roots, &other), in.url); err == nil {
		t.Fatalf("mutual TLS: a client certificate from an unknown CA was answered %d", code)
	}
	clientPEM, clientKey := clientCA.issue(t, 7, false)
	client, err := tls.X509KeyPair(clientPEM, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	code, serial, _, err = httpsInfer(t, tlsClient(roots, &client), in.url)
	if err != nil || code != http.StatusOK || serial != 2 {
		t.Fatalf("mutual TLS with a client certificate: %d, serial %d, %v; want 200 from the reloaded serial 2", code, serial, err)
	}
	if _, err := grpcTLSInfer(t, in.grpcAddr, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{client}}); err != nil {
		t.Fatalf("gRPC with mutual TLS: %v", err)
	}

	// A reload whose key does not load changes nothing.
	writeFile(t, keyFile, []byte("not a key"))
	out, err := in.cli("reload")
	if err == nil || !strings.Contains(out, keyFile) {
		t.Fatalf("reload with a broken key_file: %v\n%s\nwant a failure naming %s", err, out, keyFile)
	}
	if code, serial, _, err := httpsInfer(t, tlsClient(roots, &client), in.url); err != nil || code != http.StatusOK || serial != 2 {
		t.Fatalf("after the failed reload: %d, serial %d, %v; want 200 from serial 2", code, serial, err)
	}
}

// TestTLSHandshakeIsBounded: a client that connects to a TLS listener and
// never finishes its handshake (sends nothing, or trickles a ClientHello a
// byte at a time) is closed at limits.read_timeout, on the HTTP and the
// gRPC listener alike: it holds one connection of the cap for that long,
// not for ever.
func TestTLSHandshakeIsBounded(t *testing.T) {
	const readTimeout = 500 * time.Millisecond
	dir := t.TempDir()
	ca := newTestCA(t, "server CA")
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cert, key := ca.issue(t, 1, true)
	writeFile(t, certFile, cert)
	writeFile(t, keyFile, key)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	in := startInstance(t, options{prepWorkers: 1, modelNames: []string{"mlp"}, https: tlsClient(roots, nil),
		extra: "tls:\n  cert_file: " + certFile + "\n  key_file: " + keyFile + "\n" +
			"limits:\n  read_timeout: " + readTimeout.String() + "\n"})
	listeners := map[string]string{"HTTP": strings.TrimPrefix(in.url, "https://"), "gRPC": in.grpcAddr}
	for name, addr := range listeners {
		for _, trickle := range []bool{false, true} {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			closed := make(chan error, 1)
			go func() {
				_, err := conn.Read(make([]byte, 1)) // the server sends nothing before a ClientHello
				closed <- err
			}()
			// A TLS handshake record header, then a byte every 100ms:
			// the bytes keep coming, the handshake never completes.
			hello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}
			tick := time.NewTicker(100 * time.Millisecond)
			bound := time.NewTimer(10 * time.Second)
			var got error
		wait:
			for i := 0; ; i++ {
				select {
				case got = <-closed:
					break wait
				case <-tick.C:
					if trickle && i < len(hello) {
						conn.Write(hello[i : i+1])
					}
				case <-bound.C:
					t.Fatalf("%s (trickle %v): a connection with no handshake still open after 10s (read_timeout %s)", name, trickle, readTimeout)
				}
			}
			tick.Stop()
			bound.Stop()
			conn.Close()
			if took := time.Since(start); got == nil || took < readTimeout/2 {
				t.Errorf("%s (trickle %v): closed after %s with %v; want closed near read_timeout (%s)", name, trickle, took, got, readTimeout)
			} else {
				t.Logf("%s (trickle %v): closed after %s (%v)", name, trickle, took.Round(time.Millisecond), got)
			}
		}
	}
}
