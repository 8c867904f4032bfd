package lb

import (
	"bufio"
	"errors"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// startRawAnswerer is a backend that answers each connection's first
// request with raw, then closes it.
func startRawAnswerer(t *testing.T, raw string) Backend {
	t.Helper()
	b := Backend{Name: "raw", Socket: filepath.Join(shortDir(t), "raw.sock")}
	serveUnix(t, b.Socket, func(conn net.Conn) {
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(waitLimit))
		if readHead(bufio.NewReader(conn)) == nil {
			_, _ = io.WriteString(conn, raw)
		}
	})
	return b
}

// serveUnix listens on socket and runs serve on its own goroutine for
// each connection, until the test's cleanup.
func serveUnix(t *testing.T, socket string, serve func(net.Conn)) {
	t.Helper()
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // closed by cleanup
			}
			go serve(conn)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
}

// readHead reads a request's head from br, up to its blank line.
func readHead(br *bufio.Reader) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil || line == "\r\n" {
			return err
		}
	}
}

// TestAnswerGateRawAnswers: the gate is asked once, with the final
// answer's header, after an interim 100 Continue; an answer delimited by
// the connection's close (-2) is asked about and read whole; one whose
// backend closes mid-body fails as a broken exchange, not a refusal; the
// answer to a HEAD has no body to ask about.
func TestAnswerGateRawAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, method, raw string
		asked             []int
		body              string
		broken            bool
	}{
		{"continue", "POST", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", []int{5}, "hello", false},
		{"until-close", "POST", "HTTP/1.1 200 OK\r\n\r\nhello", []int{-2}, "hello", false},
		{"cut", "POST", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", []int{10}, "", true},
		{"cut-chunked", "POST", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", []int{-1}, "", true},
		{"head", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", nil, "", false},
	} {
		p := New(Options{})
		p.SetBackends([]Backend{startRawAnswerer(t, tc.raw)})
		var asked []int
		gate := func(h *fasthttp.ResponseHeader) error {
			asked = append(asked, h.ContentLength())
			return nil
		}
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.Header.SetMethod(tc.method)
		req.SetRequestURI("http://lb/x")
		err := p.DoRouteFor(req, resp, time.Now().Add(waitLimit), nil, nil, gate)
		if tc.broken {
			if err == nil || errors.Is(err, ErrAnswerRefused) {
				t.Errorf("%s: DoRouteFor = %v, want a broken exchange, not a refusal", tc.name, err)
			}
		} else if err != nil || string(resp.Body()) != tc.body {
			t.Errorf("%s: DoRouteFor = %v with body %q, want nil and %q", tc.name, err, resp.Body(), tc.body)
		}
		if !equalInts(asked, tc.asked) {
			t.Errorf("%s: the gate was asked with %v, want %v", tc.name, asked, tc.asked)
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
}
