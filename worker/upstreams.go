package worker

import (
	"encoding/json"
	"fmt"
	"net/url"
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
	uri := UpstreamsPath
	if len(refetch) > 0 {
		uri += "?" + url.Values{"refetch": refetch}.Encode()
	}
	if _, err := adminCall(socket, fasthttp.MethodPut, uri, body, fasthttp.StatusNoContent, timeout); err != nil {
		return fmt.Errorf("set upstreams of %q: %w", socket, err)
	}
	return nil
}
