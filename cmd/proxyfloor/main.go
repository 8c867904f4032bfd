// Command proxyfloor is the least a Go reverse proxy built on fasthttp
// does for the master's hop, and nothing more: a fasthttp.Server whose
// handler picks the upstream Unix socket with the fewest requests in
// flight, adds an X-Request-Id (as nginx is told to in the benchmark) and
// hands the request to that socket's fasthttp.HostClient. No admission,
// no retries, no hang-up watching, no answer budget, no routing, no
// logs, no metrics.
//
// It exists to measure the floor under the master: scripts/bench-vs-nginx
// runs it as a third proxy in front of the same prep workers (PROXIES=),
// so that, in one run, "master ÷ floor" is what the supervisor's own work
// costs and "floor ÷ nginx" is what Go's runtime and fasthttp cost against
// nginx's event loop (issue 32). It is a measuring instrument, not a
// product: it has the same timeouts as the benchmark's nginx (60 s to read
// a request, write an answer, hear from the upstream) and no other bound.
//
//	proxyfloor -listen 127.0.0.1:18303 -upstream /run/a.sock,/run/b.sock
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // -pprof: profile the floor as the master is (SUPERVISOR_PPROF)
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// timeout is nginx's proxy_read_timeout and client timeouts in the
// benchmark's nginx.conf: the same bounds, so the same deadline work.
const timeout = 60 * time.Second

// upstream is one prep worker's socket and its requests in flight.
type upstream struct {
	client   *fasthttp.HostClient
	inFlight atomic.Int64
}

// floor is the proxy: its upstreams, and the request-id counter.
type floor struct {
	ups []*upstream
	ids atomic.Uint64
}

func main() {
	listen := flag.String("listen", "127.0.0.1:18303", "host:port to serve on")
	sockets := flag.String("upstream", "", "comma-separated Unix socket paths of the upstream HTTP servers")
	pprof := flag.String("pprof", "", "host:port to serve net/http/pprof on (empty: none)")
	flag.Parse()
	if *pprof != "" {
		go func() { fmt.Fprintln(os.Stderr, "proxyfloor: pprof:", http.ListenAndServe(*pprof, nil)) }()
	}
	f, err := newFloor(strings.Split(*sockets, ","))
	if err == nil {
		err = f.serve(*listen)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxyfloor:", err)
		os.Exit(1)
	}
}

func newFloor(sockets []string) (*floor, error) {
	f := &floor{}
	for _, s := range sockets {
		if s == "" {
			continue
		}
		f.ups = append(f.ups, &upstream{client: &fasthttp.HostClient{
			Addr:                      "upstream", // a label; Dial ignores it
			Dial:                      func(string) (net.Conn, error) { return net.Dial("unix", s) },
			MaxConns:                  512, // the lb's per-backend cap
			ReadTimeout:               timeout,
			WriteTimeout:              timeout,
			ConnPoolStrategy:          fasthttp.LIFO,
			NoDefaultUserAgentHeader:  true,
			DisablePathNormalizing:    true,
			MaxIdemponentCallAttempts: 1,
		}})
	}
	if len(f.ups) == 0 {
		return nil, errors.New("-upstream names no socket")
	}
	return f, nil
}

func (f *floor) serve(addr string) error {
	s := &fasthttp.Server{
		Handler:                       f.handle,
		ReadTimeout:                   timeout,
		WriteTimeout:                  timeout,
		MaxRequestBodySize:            64 << 20, // nginx's client_max_body_size there
		DisableHeaderNamesNormalizing: true,
		NoDefaultServerHeader:         true,
		NoDefaultDate:                 true,
	}
	return s.ListenAndServe(addr)
}

// handle sends the request to the least-loaded upstream (the first of
// equals) and answers with what it said, or 502.
func (f *floor) handle(ctx *fasthttp.RequestCtx) {
	up := f.ups[0]
	for _, u := range f.ups[1:] {
		if u.inFlight.Load() < up.inFlight.Load() {
			up = u
		}
	}
	var id [16]byte
	ctx.Request.Header.SetBytesV("X-Request-Id", strconv.AppendUint(id[:0], f.ids.Add(1), 16))
	up.inFlight.Add(1)
	err := up.client.Do(&ctx.Request, &ctx.Response)
	up.inFlight.Add(-1)
	if err != nil {
		ctx.Response.Reset()
		ctx.Error(`{"error":"upstream: `+err.Error()+`"}`, fasthttp.StatusBadGateway)
	}
}
