package front

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// A client that sends its whole body before it reads (as blocking HTTP
// clients do) and is refused from the header, its body unread, reads the
// V2 answer rather than a reset; the connection's place under
// max_connections is given back once it is really closed.
func TestRefusedWhileSendingReadsTheAnswer(t *testing.T) {
	f := startFront(t, nil)
	body := bytes.Repeat([]byte("x"), 3<<20) // over the socket buffers, under lingerMaxBytes
	for round := range 3 {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		head := "POST /v2/models/nope/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n"
		if _, err := c.Write(append([]byte(head), body...)); err != nil {
			t.Fatalf("round %d: sending the body: %v (the server reset the connection)", round, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("round %d: no answer after sending the body: %v", round, err)
		}
		var e struct{ Error string }
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusNotFound || e.Error == "" {
			t.Fatalf("round %d: %d %+v (%v); want 404 with a V2 error", round, resp.StatusCode, e, err)
		}
		c.Close()
	}
	polltest.Until(t, 10*time.Second, 5*time.Millisecond, "every lingering connection closed", func() bool {
		return f.open() == 0
	})
}

// A refused client that then neither closes nor stops sending (silent, or
// trickling a byte at a time) holds its connection for lingerTime at most:
// the master closes it and gives its place under max_connections back.
func TestLingeringIsBoundedForClientsThatNeverClose(t *testing.T) {
	f := startFront(t, nil)
	for _, trickle := range []bool{false, true} {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		head := "POST /v2/models/nope/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3145728\r\n\r\n"
		if _, err := c.Write(append([]byte(head), bytes.Repeat([]byte("x"), 1024)...)); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("trickle=%v: %v %v; want 404", trickle, resp, err)
		}
		resp.Body.Close()
		stop := make(chan struct{})
		if trickle {
			go func() {
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := c.Write([]byte("x")); err != nil {
							return
						}
					}
				}
			}()
		}
		start := time.Now()
		_, err = r.ReadByte() // end of stream (the write side closed), then the reset
		for err == nil {
			_, err = r.ReadByte()
		}
		polltest.Until(t, 10*time.Second, 5*time.Millisecond, "the lingering connection's place given back",
			func() bool { return f.open() == 0 })
		close(stop)
		if held := time.Since(start); held > lingerTime+5*time.Second {
			t.Fatalf("trickle=%v: the connection was held %s after its answer, past lingerTime (%s)", trickle, held, lingerTime)
		}
	}
}
