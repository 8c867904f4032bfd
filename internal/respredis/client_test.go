package respredis

import (
	"bytes"
	"context"
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/internal/polltest"
	"github.com/supervisor-dev/supervisor/internal/respredis/redistest"
)

func TestRedisSetGetAndKilled(t *testing.T) {
	srv := redistest.Start(t)
	c, err := New(srv.URL, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	k, other := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	c.Set(k, []byte("answer"), time.Minute, maxLen)
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "the SET lands", func() bool {
		got, ok := c.Get(k, time.Time{}, maxLen)
		return ok && string(got) == "answer"
	})
	if _, ok := c.Get(other, time.Time{}, maxLen); ok {
		t.Fatal("a key never set hit")
	}
	c.Set(other, []byte("short"), time.Millisecond, maxLen)
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "the 1ms entry expires", func() bool {
		_, ok := c.Get(other, time.Time{}, maxLen)
		return !ok
	})
	if _, ok := c.Get(k, time.Now().Add(-time.Second), maxLen); ok {
		t.Fatal("a lookup past the request's deadline hit")
	}
	srv.Kill()
	start := time.Now()
	if _, ok := c.Get(k, time.Time{}, maxLen); ok {
		t.Fatal("a killed Redis hit")
	}
	if d := time.Since(start); d > slowLookup {
		t.Fatalf("a lookup on a killed Redis took %s, want about %s at most", d, GetTimeout)
	}
	c.Set(k, []byte("x"), time.Minute, maxLen) // must not block or panic
}

func TestNewRefusesABadURL(t *testing.T) {
	if _, err := New("http://x", zerolog.Nop()); err == nil {
		t.Fatal("an http:// URL was accepted")
	}
}

// maxLen is the largest value the tests' Gets read.
const maxLen = 1 << 10

// A value longer than maxLen, stored under a real key by another writer,
// is a miss that Redis never sends: its output grows by far less than the
// value (INFO stats total_net_output_bytes), so the worker does not read
// or allocate it.
func TestGetOversizeIsAMissUnread(t *testing.T) {
	srv := redistest.Start(t)
	c, err := New(srv.URL, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const oversize = 4 << 20
	k := sha256.Sum256([]byte("big"))
	ctx := context.Background()
	if err := c.rdb.Set(ctx, key(k), bytes.Repeat([]byte{'x'}, oversize), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	before := netOutput(t, c)
	if got, ok := c.Get(k, time.Time{}, maxLen); ok {
		t.Fatalf("a %d-byte value hit with maxLen %d (%d bytes)", oversize, maxLen, len(got))
	}
	// The second INFO's own answer (a few KiB) is in the difference.
	if sent := netOutput(t, c) - before; sent > 64<<10 {
		t.Fatalf("Redis sent %d bytes for a lookup of a %d-byte value, want at most about maxLen (%d)", sent, oversize, maxLen)
	}
	c.Set(k, bytes.Repeat([]byte{'y'}, maxLen+1), time.Minute, maxLen)
	if n, err := c.rdb.StrLen(ctx, key(k)).Result(); err != nil || n != oversize {
		t.Fatalf("a Set over maxLen reached Redis: STRLEN %d (%v), want the old %d", n, err, oversize)
	}
	exact := sha256.Sum256([]byte("exact"))
	c.Set(exact, bytes.Repeat([]byte{'z'}, maxLen), time.Minute, maxLen)
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "a maxLen value hits", func() bool {
		got, ok := c.Get(exact, time.Time{}, maxLen)
		return ok && len(got) == maxLen
	})
}

// netOutput is Redis's total_net_output_bytes.
func netOutput(t *testing.T, c *Client) int64 {
	t.Helper()
	info, err := c.rdb.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO stats has no total_net_output_bytes")
	return 0
}
