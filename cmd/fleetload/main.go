// Command fleetload sends one V2 inference request over and over, on a
// few keep-alive connections, until its duration ends or it gets SIGINT or
// SIGTERM, and prints what happened as one JSON line: requests, answered
// 200, failures by cause (HTTP status, refused, reset, closed before an
// answer, timeout) and latency percentiles of the successful requests.
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
	flag.Parse()
	if err := run(*url, *bodyFile, *conns, *d); err != nil {
		fmt.Fprintln(os.Stderr, "fleetload:", err)
		os.Exit(2)
	}
}

func run(url, bodyFile string, conns int, d time.Duration) error {
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
	res := newLoader(url, body, conns).run(ctx)
	return json.NewEncoder(os.Stdout).Encode(res.summary())
}
