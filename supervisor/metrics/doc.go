// Package metrics is the master's metrics listener (metrics.listen):
// /metrics (Prometheus text), /status (a self-refreshing HTML page, with a
// chart of the prep pool's request rate) and /status.json (the Report),
// rendered by supervisor/status from the scoreboard (supervisor/board)
// and the master's state (Master), all read at request time.
//
// Invariants:
//   - Nothing on the inference path waits for it: a scrape reads the
//     board under its mutex and the master's state through Master, and
//     NVML at most once per gpuCacheFor.
//   - It answers only an IP literal or a Host name it serves (host.go:
//     loopback, the host of metrics.listen, metrics.allowed_hosts, read
//     per request so a reload applies at once); any other name gets 403,
//     so a page in a browser on the host cannot read it by DNS rebinding.
//   - A panic in a handler is answered 500; it never takes the master
//     down.
//   - At most maxConns connections are open (conncap.go); one more is
//     answered 503 and closed, so a connection flood here cannot take the
//     master's file descriptors from the public listener.
//
// Goroutines: Serve starts two, the fasthttp server and the chart's
// sampler (one point per status.ChartStep); Close stops both and returns
// once they have exited. The listener is the caller's (the master opens it
// through the upgrader, so an upgrade hands it over); Close closes it.
package metrics
