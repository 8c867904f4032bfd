package front

import (
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/lb"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

func TestMain(m *testing.M) {
	// Every request body is a mapping in this package's tests, so any
	// use of a body after finish unmapped it crashes the test binary.
	mappedBodyMin = 1
	os.Exit(m.Run())
}

// testBackend is the master as the front sees it: a config (nil makes
// the header hook panic) and a readiness.
type testBackend struct {
	cfg      atomic.Pointer[config.Config]
	notReady string
}

func (b *testBackend) Config() *config.Config { return b.cfg.Load() }
func (b *testBackend) Readiness() Readiness   { return Readiness{NotReady: b.notReady} }

// newTestFront is a front for cfg over a real lb with no backends;
// edits change its Options.
func newTestFront(cfg *config.Config, edits ...func(*Options)) (*Front, *testBackend, *lb.Proxy) {
	b := &testBackend{}
	b.cfg.Store(cfg)
	proxy := lb.New(lb.Options{Timeout: cfg.Prep.UpstreamTimeout.Duration + 5*time.Second, Logger: zerolog.Nop()})
	opts := Options{Version: "test", Log: zerolog.Nop()}
	for _, edit := range edits {
		edit(&opts)
	}
	return New(b, proxy, opts), b, proxy
}
