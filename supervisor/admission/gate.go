package admission

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/budget"
	"github.com/supervisor-dev/supervisor/supervisor/config"
)

// Gate is the admission state both fronts share: the API keys in force
// and their rate limits, readiness, the requests in flight
// (limits.max_in_flight) and the body budget
// (limits.max_body_bytes_in_flight). The public front decides each
// request's header with it; the gRPC front asks it about an RPC's header
// (AdmitMessage) and charges its messages and answers to its budget
// (grpcfront.Budget), then hands the RPC to the public front's handler,
// which decides it again, whole, with the same Gate.
type Gate struct {
	cfg func() *config.Config
	log zerolog.Logger

	// keys are the API keys in force (nil = no authentication);
	// setKeys orders SetKeys calls; fleet is the rate limit shared
	// through Redis that they hand to the keys (ratelimit.go).
	keys    atomic.Pointer[Keys]
	setKeys sync.Mutex
	fleet   fleetLimit
	// serving gates inference routes (SetServing); inFlight counts
	// proxied requests against limits.max_in_flight.
	serving  atomic.Bool
	inFlight atomic.Int64

	// bodies bounds the request body bytes held (bodies.go); made at
	// its first use, under the limit then in force.
	bodies     *Bodies
	bodiesOnce sync.Once
}

// New returns a Gate that admits no inference (not serving) and asks
// for no API key, deciding under the config cfg returns.
func New(cfg func() *config.Config, log zerolog.Logger) *Gate {
	return &Gate{cfg: cfg, log: log}
}

// SetKeys puts keys (LoadKeys) in force for the requests decided from
// now. A key that was in force before with the same rate limit keeps its
// bucket (ratelimit.go): a reload, or a repository load (which reloads),
// does not refill it.
func (g *Gate) SetKeys(keys *Keys) {
	g.setKeys.Lock()
	defer g.setKeys.Unlock()
	keys.carryBuckets(g.keys.Load())
	g.fleet.adopt(keys, g.log)
	g.keys.Store(keys)
}

// Verify refuses a request that may not pass from its header alone: 401
// without a valid key, 429 over the key's rate (Keys.Verify).
func (g *Gate) Verify(h *fasthttp.RequestHeader, path string) Refusal {
	return g.keys.Load().Verify(h, path)
}

// SetServing opens (true) or closes inference routes: while false they
// are refused 503 (Ready).
func (g *Gate) SetServing(on bool) { g.serving.Store(on) }

// notReady is the refusal of an inference request while not serving.
var notReady = Refusal{Status: fasthttp.StatusServiceUnavailable, Msg: "the server is not ready: workers are starting or stopping"}

// Ready refuses an inference request while the server is not serving.
func (g *Gate) Ready() Refusal {
	if !g.serving.Load() {
		return notReady
	}
	return Refusal{}
}

// TakeInFlight takes a place under limits.max_in_flight, or refuses 503
// with Retry-After, holding nothing; ReleaseInFlight gives it back.
func (g *Gate) TakeInFlight(c *config.Config) Refusal {
	limit := int64(c.Limits.MaxInFlight)
	if n := g.inFlight.Add(1); limit > 0 && n > limit {
		g.inFlight.Add(-1)
		return busy(limit)
	}
	return Refusal{}
}

// ReleaseInFlight gives back a place TakeInFlight took.
func (g *Gate) ReleaseInFlight() { g.inFlight.Add(-1) }

// InFlight is the number of places under limits.max_in_flight taken.
func (g *Gate) InFlight() int64 { return g.inFlight.Load() }

func busy(limit int64) Refusal {
	return Refusal{Status: fasthttp.StatusServiceUnavailable, Header: fasthttp.HeaderRetryAfter, Value: "1",
		Msg: fmt.Sprintf("server busy: %d requests in flight (limits.max_in_flight); retry later", limit)}
}

// Bodies is the body budget, its limit the configuration's now.
func (g *Gate) Bodies() *Bodies {
	limit := g.cfg().BodyBudgetLimit()
	g.bodiesOnce.Do(func() { g.bodies = NewBodies(limit) })
	g.bodies.SetLimit(limit)
	return g.bodies
}

// ReserveDeclared reserves a declared body of length bytes in the body
// budget, or refuses 503 with Retry-After, taking nothing (a nil charge
// for no body).
func (g *Gate) ReserveDeclared(length int64) (*budget.Charge, Refusal) {
	if length <= 0 {
		return nil, Refusal{}
	}
	c, err := g.Bodies().Reserve(length, length)
	if err != nil {
		return nil, Refusal{Status: fasthttp.StatusServiceUnavailable, Header: fasthttp.HeaderRetryAfter, Value: "1",
			Msg: "server busy: request bodies in flight fill limits.max_body_bytes_in_flight; retry later"}
	}
	return c, Refusal{}
}

// AdmitMessage is the part of the decision an inference RPC's header can
// settle before gRPC reads its message (up to max_body_bytes):
// readiness, the API key (not its rate, which the whole decision takes
// once per request) and max_in_flight as it stands (the whole decision
// takes the place). It holds nothing (grpcfront.AdmitFunc).
func (g *Gate) AdmitMessage(h *fasthttp.RequestHeader) (status int, msg string, retryAfter bool) {
	if r := g.Ready(); r.Status != 0 {
		return r.Status, r.Msg, false
	}
	if ks := g.keys.Load(); ks != nil {
		if _, r := ks.Authenticate(h); r.Status != 0 {
			return r.Status, r.Msg, false
		}
	}
	if limit := int64(g.cfg().Limits.MaxInFlight); limit > 0 && g.inFlight.Load() >= limit {
		return fasthttp.StatusServiceUnavailable, busy(limit).Msg, true
	}
	return fasthttp.StatusOK, "", false
}

// RateLimitFallbacks is the number of rate-limit decisions Redis did not
// answer, taken by this host's bucket (ratelimit.go).
func (g *Gate) RateLimitFallbacks() int64 { return g.fleet.fallbacks.Load() }

// ReserveBody takes n bytes of the body budget for a gRPC message about
// to be received (grpcfront.Budget), or refuses, taking nothing. Over
// 1 MiB it is held, as a large body is, to seven eighths of the budget.
func (g *Gate) ReserveBody(n int64) (*budget.Charge, error) { return g.Bodies().Reserve(n, n) }

// WaitBody is ReserveBody that waits its turn (grpcfront.Budget): a
// large message waiting first in line gets the room given back before
// any other (Bodies).
func (g *Gate) WaitBody(ctx context.Context, n int64, gone func() error) (*budget.Charge, error) {
	return g.Bodies().Wait(ctx, n, gone)
}

// ReserveAnswer takes n bytes of the body budget for a gRPC answer held
// until it is written (grpcfront.Budget), in the answers lane whatever
// its size (Bodies.ReserveAnswer).
func (g *Gate) ReserveAnswer(n int64) (*budget.Charge, error) { return g.Bodies().ReserveAnswer(n) }
