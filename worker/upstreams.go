package worker

import (
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// UpstreamsPath is the prep worker's admin route through which the master
// replaces its list of infer worker sockets (PUT, JSON array of paths). It
// is reachable only on the worker's Unix socket: the public lb forwards
// nothing but /v2/models/.
const UpstreamsPath = "/_supervisor/upstreams"

// SetUpstreams tells the prep worker listening on socket which infer
// workers to use. It returns once the worker has switched. The prep worker
// reads a worker's models once, when its socket first appears; refetch
// names infer workers whose models changed in place since (a reload that
// kept them), to be read again (the query's refetch values).
func SetUpstreams(socket string, inferSockets []string, timeout time.Duration, refetch ...string) error {
	body, err := json.Marshal(inferSockets)
	if err != nil {
		return err
	}
	c := &fasthttp.HostClient{
		Addr: "prep",
		Dial: func(string) (net.Conn, error) { return net.DialTimeout("unix", socket, timeout) },
	}
	defer c.CloseIdleConnections()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(fasthttp.MethodPut)
	req.SetRequestURI("http://prep" + UpstreamsPath)
	for _, s := range refetch {
		req.URI().QueryArgs().Add("refetch", s)
	}
	req.SetBodyRaw(body)
	if err := c.DoTimeout(req, resp, timeout); err != nil {
		return fmt.Errorf("set upstreams of %q: %w", socket, err)
	}
	if resp.StatusCode() != fasthttp.StatusNoContent {
		return fmt.Errorf("set upstreams of %q: %d %s", socket, resp.StatusCode(), resp.Body())
	}
	return nil
}
