package supervisor

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
