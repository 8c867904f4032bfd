package inferquery

import (
	"encoding/json"
	"fmt"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/supervisor-dev/supervisor/internal/batch"
	"github.com/supervisor-dev/supervisor/worker"
)

// MetadataTimeout bounds one infer worker's answer to GET /metadata when
// the master changes the sockets: it waits 5s for a whole PUT, which
// fetches in parallel. A prep worker's boot fetch retries with longer
// bounds, up to its boot_timeout (worker/prep, router.boot).
const MetadataTimeout = 3 * time.Second

// statsTimeout bounds one infer worker's answer to a statistics request.
const statsTimeout = 5 * time.Second

// Metadata reads one infer worker's GET /metadata, waiting up to timeout.
func Metadata(socket string, timeout time.Duration) ([]worker.ModelStatus, error) {
	c := &fasthttp.HostClient{
		Addr: "infer",
		Dial: func(string) (net.Conn, error) { return net.DialTimeout("unix", socket, timeout) },
	}
	defer c.CloseIdleConnections()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://infer/metadata")
	if err := c.DoTimeout(req, resp, timeout); err != nil {
		return nil, fmt.Errorf("infer worker %q: GET /metadata (waited up to %s): %w", socket, timeout, err)
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return nil, fmt.Errorf("infer worker %q answered %d to GET /metadata: %s", socket, resp.StatusCode(), resp.Body())
	}
	var sts []worker.ModelStatus
	if err := json.Unmarshal(resp.Body(), &sts); err != nil {
		return nil, fmt.Errorf("infer worker %q: bad GET /metadata answer: %w", socket, err)
	}
	return sts, nil
}

// Stats asks every infer worker, in parallel, for its statistics of
// model (all models for ""), and sums them per model.
func Stats(sockets []string, model string) (map[string]batch.Stats, error) {
	type answer struct {
		stats map[string]batch.Stats
		err   error
	}
	answers := make(chan answer, len(sockets))
	for _, s := range sockets {
		go func() {
			st, err := workerStats(s, model)
			answers <- answer{st, err}
		}()
	}
	sum := map[string]batch.Stats{}
	var firstErr error
	for range sockets {
		a := <-answers
		if a.err != nil {
			firstErr = a.err
			continue
		}
		for m, st := range a.stats {
			total := sum[m]
			total.Add(st)
			sum[m] = total
		}
	}
	return sum, firstErr
}

// workerStats reads one infer worker's GET /stats.
func workerStats(socket, model string) (map[string]batch.Stats, error) {
	c := &fasthttp.HostClient{
		Addr: "infer",
		Dial: func(string) (net.Conn, error) { return net.DialTimeout("unix", socket, statsTimeout) },
	}
	defer c.CloseIdleConnections()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://infer/stats")
	if model != "" {
		req.URI().QueryArgs().Set("model", model)
	}
	if err := c.DoTimeout(req, resp, statsTimeout); err != nil {
		return nil, fmt.Errorf("could not read statistics from infer worker %q: %w", socket, err)
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return nil, fmt.Errorf("infer worker %q answered %d to a statistics request: %s", socket, resp.StatusCode(), resp.Body())
	}
	var st map[string]batch.Stats
	if err := json.Unmarshal(resp.Body(), &st); err != nil {
		return nil, fmt.Errorf("bad statistics from infer worker %q: %w", socket, err)
	}
	return st, nil
}
