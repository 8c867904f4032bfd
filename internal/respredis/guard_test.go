package respredis

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestScannerFraming: replies within the bounds pass, however the stream
// is cut into reads; a string, a line or an aggregate over them is
// refused as soon as its length line (or its line) passes the bound.
func TestScannerFraming(t *testing.T) {
	var max atomic.Int64
	max.Store(10)
	ok := "+OK\r\n$3\r\nabc\r\n$-1\r\n_\r\n%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n" +
		"*2\r\n$0\r\n\r\n$" + strconv.Itoa(10+replySlack) + "\r\n" + strings.Repeat("x", 10+replySlack) + "\r\n-ERR unknown\r\n"
	for _, chunk := range []int{1, 2, 7, len(ok)} {
		s := respScanner{max: &max}
		for i := 0; i < len(ok); i += chunk {
			if err := s.scan([]byte(ok[i:min(i+chunk, len(ok))])); err != nil {
				t.Fatalf("chunks of %d: %v at byte %d", chunk, err, i)
			}
		}
		if s.state != lineStart {
			t.Errorf("chunks of %d: ended in state %d, want at a line's start", chunk, s.state)
		}
	}
	for name, bad := range map[string]string{
		"string over the bound":   "$" + strconv.Itoa(11+replySlack) + "\r\n",
		"512 MB claim":            "$536870912\r\n",
		"huge claim":              "$99999999999999999999\r\n",
		"aggregate over":          "*" + strconv.Itoa(maxAggregate+1) + "\r\n",
		"nested string over":      "*1\r\n$536870912\r\n",
		"nested aggregates over":  strings.Repeat("*"+strconv.Itoa(maxAggregate)+"\r\n", maxElements/maxAggregate+1),
		"line over the bound":     "+" + strings.Repeat("x", 11+replySlack),
		"not a length":            "$12a\r\n",
		"streamed string (RESP3)": "$?\r\n",
	} {
		s := respScanner{max: &max}
		if err := s.scan([]byte(bad)); !errors.Is(err, errReplyTooLarge) {
			t.Errorf("%s: %v, want errReplyTooLarge", name, err)
		}
	}
}

// lyingRedis is a TCP server that answers HELLO with hello (an error
// makes the client speak RESP2), a GETRANGE with a 512 MB string it never
// sends, and anything else +OK. It returns its URL.
func lyingRedis(t *testing.T, hello string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go answerLies(c, hello)
		}
	}()
	return "redis://" + ln.Addr().String() + "/0"
}

// answerLies answers c's commands as lyingRedis says, until c is closed.
func answerLies(c net.Conn, hello string) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		reply := "+OK\r\n"
		switch strings.ToUpper(cmd) {
		case "HELLO":
			reply = hello
		case "GETRANGE", "GET":
			reply = "$536870912\r\nxxxx"
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

// readCommand reads one RESP command (an array of bulk strings) and
// returns its name.
func readCommand(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "*") {
		return "", errors.New("not a command")
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	var name string
	for i := range min(n, 64) {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		size, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		arg := make([]byte, min(size, 1<<16)+2)
		if _, err := io.ReadFull(r, arg); err != nil {
			return "", err
		}
		if i == 0 {
			name = string(arg[:len(arg)-2])
		}
	}
	return name, nil
}

// TestLyingRedisCostsNothing: a server that answers a lookup with a
// claim of 512 MB is a miss within GetTimeout, for which the worker
// allocates a few KB, not the claim (go-redis alone allocates it first).
func TestLyingRedisCostsNothing(t *testing.T) {
	alloc, took := fourLies(t, "-ERR unknown command 'HELLO'\r\n")
	if alloc > 4<<20 {
		t.Errorf("4 lookups on a lying server allocated %d bytes, want a few KB", alloc)
	}
	if took > 4*(GetTimeout+100*time.Millisecond) {
		t.Errorf("4 lookups took %s", took)
	}
}

// TestLyingHandshakeCostsNothing: a server that answers HELLO with arrays
// nested 8,000 deep, each declaring 1,024 elements (7 bytes that make
// go-redis allocate 16 KiB before it reads the next), is a miss for
// which the worker allocates a few hundred KB, not the 128 MB that those
// 56 KB of claims would cost.
func TestLyingHandshakeCostsNothing(t *testing.T) {
	alloc, _ := fourLies(t, "%1\r\n+server\r\n"+strings.Repeat("*"+strconv.Itoa(maxAggregate)+"\r\n", 8000))
	if alloc > 4<<20 {
		t.Errorf("4 lookups on a server nesting arrays in its handshake allocated %d bytes, want a few hundred KB", alloc)
	}
}

// fourLies makes 4 lookups, each a miss, on a lyingRedis that answers
// HELLO with hello, and returns what they allocated and how long they
// took.
func fourLies(t *testing.T, hello string) (alloc uint64, took time.Duration) {
	t.Helper()
	c, err := New(lyingRedis(t, hello), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k := sha256.Sum256([]byte("k"))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for range 4 {
		if _, ok := c.Get(k, time.Time{}, maxLen); ok {
			t.Fatal("a lying server's claim hit")
		}
	}
	took = time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took
}
