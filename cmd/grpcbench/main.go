// Command grpcbench measures one model served over gRPC (ModelInfer with
// raw_input_contents) against the same model over HTTP with the binary
// tensor extension, side by side in one run: for each concurrency, both
// protocols in turn, each for the same duration, printing requests/s,
// p50 and p99 latency and the master's CPU time per request (from
// /proc/PID/stat, utime+stime), so that the cost of turning an RPC into
// the HTTP request the prep workers take is a number.
//
//	grpcbench -http 127.0.0.1:8000 -grpc 127.0.0.1:8001 -model mlp -pid $(pgrep -o supervisor) -c 1,64 -d 10s
//
// Each client sends one request at a time. HTTP clients have one
// connection each; gRPC clients share -grpc-conns connections (gRPC
// multiplexes its streams, as tritonclient.grpc does over one channel).
// The gRPC requests go as unary ModelInfer calls ("grpc"), then over
// ModelStreamInfer ("grpc-stream": one stream per client, a request and
// its answer at a time). -protos picks the targets; "http-shm" and
// "grpc-shm" send the same request through Triton's system shared memory
// (shm.go): its inputs read from, its outputs written into, /dev/shm
// regions of each client. With -raw (the model's in-process infer/s) a
// served/raw column says what serving keeps of it.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	httpAddr := flag.String("http", "127.0.0.1:8000", "the supervisor's HTTP host:port")
	grpcAddr := flag.String("grpc", "127.0.0.1:8001", "the supervisor's gRPC host:port")
	model := flag.String("model", "mlp", "the model to infer with; its inputs are filled from its metadata (dynamic dimensions = 1)")
	pid := flag.Int("pid", 0, "the master's pid, for its CPU time per request (0: not measured)")
	concs := flag.String("c", "1,64", "comma-separated concurrencies")
	dur := flag.Duration("d", 10*time.Second, "how long each protocol runs at each concurrency")
	conns := flag.Int("grpc-conns", 1, "gRPC connections the clients share")
	protos := flag.String("protos", "http,grpc,grpc-stream", "comma-separated targets: http, grpc, grpc-stream, http-shm, grpc-shm")
	raw := flag.Float64("raw", 0, "the model's raw in-process infer/s, for a served/raw column (0: none)")
	flag.Parse()
	if err := run(*httpAddr, *grpcAddr, *model, *pid, *concs, *dur, *conns, *protos, *raw); err != nil {
		fmt.Fprintln(os.Stderr, "grpcbench:", err)
		os.Exit(1)
	}
}

func run(httpAddr, grpcAddr, model string, pid int, concs string, dur time.Duration, conns int, protos string, raw float64) error {
	in, err := modelInputs(httpAddr, model)
	if err != nil {
		return err
	}
	var cs []int
	for _, f := range strings.Split(concs, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			return fmt.Errorf("-c: %q is not a concurrency", f)
		}
		cs = append(cs, c)
	}
	h := newHTTPTarget(httpAddr, model, in)
	g, err := newGRPCTarget(grpcAddr, model, in, conns)
	if err != nil {
		return err
	}
	defer g.close()
	var targets []target
	var shm *shmClients
	for _, p := range strings.Split(protos, ",") {
		switch p = strings.TrimSpace(p); p {
		case "http":
			targets = append(targets, h)
		case "grpc":
			targets = append(targets, g)
		case "grpc-stream":
			targets = append(targets, &streamTarget{grpcTarget: g})
		case "http-shm", "grpc-shm":
			if shm == nil {
				if shm, err = newSHMClients(httpAddr, model, in, slices.Max(cs)); err != nil {
					return fmt.Errorf("shared memory regions: %w", err)
				}
				defer shm.close()
			}
			if p == "http-shm" {
				targets = append(targets, newHTTPSHMTarget(shm, model))
			} else {
				targets = append(targets, newGRPCSHMTarget(shm, g, model))
			}
		default:
			return fmt.Errorf("-protos: %q is not a target (http, grpc, grpc-stream, http-shm, grpc-shm)", p)
		}
	}
	fmt.Printf("model %s, %s per run, gRPC over %d connection(s)\n", model, dur, conns)
	fmt.Printf("%-11s %5s %9s %9s %9s %9s %8s %14s %10s\n", "proto", "conc", "requests", "errors", "req/s", "p50_ms", "p99_ms", "master_us/req", "served/raw")
	for _, c := range cs {
		for _, t := range targets {
			r := measure(t, c, dur, pid)
			ratio := "-"
			if raw > 0 {
				ratio = fmt.Sprintf("%.2f", r.rps()/raw)
			}
			fmt.Printf("%-11s %5d %9d %9d %9.0f %9.3f %8.3f %14s %10s\n", t.name(), c, r.n, r.errors, r.rps(), ms(r.p50), ms(r.p99), r.cpuPerRequest(), ratio)
			if r.firstErr != nil {
				fmt.Printf("      first error: %v\n", r.firstErr)
			}
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
