package respredis

import (
	"crypto/sha256"
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
	c.Set(k, []byte("answer"), time.Minute)
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "the SET lands", func() bool {
		got, ok := c.Get(k, time.Time{})
		return ok && string(got) == "answer"
	})
	if _, ok := c.Get(other, time.Time{}); ok {
		t.Fatal("a key never set hit")
	}
	c.Set(other, []byte("short"), time.Millisecond)
	polltest.Until(t, 5*time.Second, 10*time.Millisecond, "the 1ms entry expires", func() bool {
		_, ok := c.Get(other, time.Time{})
		return !ok
	})
	if _, ok := c.Get(k, time.Now().Add(-time.Second)); ok {
		t.Fatal("a lookup past the request's deadline hit")
	}
	srv.Kill()
	start := time.Now()
	if _, ok := c.Get(k, time.Time{}); ok {
		t.Fatal("a killed Redis hit")
	}
	if d := time.Since(start); d > slowLookup {
		t.Fatalf("a lookup on a killed Redis took %s, want about %s at most", d, GetTimeout)
	}
	c.Set(k, []byte("x"), time.Minute) // must not block or panic
}

func TestNewRefusesABadURL(t *testing.T) {
	if _, err := New("http://x", zerolog.Nop()); err == nil {
		t.Fatal("an http:// URL was accepted")
	}
}
