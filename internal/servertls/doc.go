// Package servertls is the TLS of the public listeners (HTTP and gRPC):
// it loads a certificate, its key and the client CAs from their files,
// and builds the server tls.Config each listener wraps its connections
// in. The config reads the files' contents through an atomic pointer at
// each handshake (GetConfigForClient), so a reload that loads new files
// (Set) reaches the next connection while the established ones keep the
// session they negotiated: nothing is closed.
//
// The defaults are modern: TLS 1.2 at least; for TLS 1.2 only ECDHE key
// exchange with AEAD ciphers (AES-GCM, ChaCha20-Poly1305), which drops
// Go's remaining CBC-SHA1 suites; TLS 1.3's suites are all AEAD and not
// configurable. With client CAs set, every client must present a
// certificate they sign (mutual TLS, Triton's --grpc-use-ssl-mutual).
package servertls
