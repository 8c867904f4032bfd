// Command fleetload sends one V2 inference request over and over, on a
// few keep-alive connections, until its duration ends or it gets SIGINT or
// SIGTERM, and prints what happened as one JSON line: requests, answered
// 200, failures by cause (HTTP status, refused, reset, closed before an
// answer, timeout) and latency percentiles of the successful requests.
// With -every, it also prints such a line (with t_s, the seconds since
// the start) for the requests that finished in each period, for
// timelines (scripts/bench-autoscale).
// scripts/fleet runs it through HAProxy while hosts upgrade, stop, reload
// and die. At its end it sends no more, and the requests in flight finish
// and count, so its count of answered requests is what the servers served.
//
//	fleetload -url http://10.77.0.100:8000/v2/models/mlp/infer -body models/mlp.request.json -c 8 -d 5s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	url := flag.String("url", "", "the V2 infer URL (required)")
	bodyFile := flag.String("body", "", "a file holding the JSON request body (required)")
	conns := flag.Int("c", 8, "connections, each sending back to back")
	d := flag.Duration("d", 0, "how long to run (0 = until SIGINT or SIGTERM)")
	every := flag.Duration("every", 0, "also print a JSON line (with t_s) for the requests finished in each period this long; 0 = only the total")
	flag.Parse()
	if err := run(*url, *bodyFile, *conns, *d, *every); err != nil {
		fmt.Fprintln(os.Stderr, "fleetload:", err)
		os.Exit(2)
	}
}

func run(url, bodyFile string, conns int, d, every time.Duration) error {
	if url == "" || bodyFile == "" || conns < 1 {
		return fmt.Errorf("want -url, -body and -c of 1 or more (see -h)")
	}
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		return fmt.Errorf("read the request body: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	l := newLoader(url, body, conns)
	out := json.NewEncoder(os.Stdout)
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		if every > 0 {
			l.report(ctx, every, func(p periodLine) { _ = out.Encode(p) })
		}
	}()
	res := l.run(ctx) // returns once ctx ended, so report does too
	<-reported
	return out.Encode(res.summary())
}
