package worker

import (
	"fmt"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// adminCall sends one request to a worker's admin route on its Unix
// socket (UpstreamsPath, ModelsPath) and returns the answer's body when
// its status is want (else an error: the status and the body). timeout
// bounds the whole exchange.
func adminCall(socket, method, uri string, body []byte, want int, timeout time.Duration) ([]byte, error) {
	c := &fasthttp.HostClient{
		Addr:         "worker",
		Dial:         func(string) (net.Conn, error) { return net.DialTimeout("unix", socket, timeout) },
		ReadTimeout:  timeout,
		WriteTimeout: timeout,
	}
	defer c.CloseIdleConnections()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://worker" + uri)
	req.SetBodyRaw(body)
	if err := c.DoTimeout(req, resp, timeout); err != nil {
		return nil, err
	}
	if resp.StatusCode() != want {
		return nil, fmt.Errorf("%d %s", resp.StatusCode(), resp.Body())
	}
	return append([]byte(nil), resp.Body()...), nil
}
