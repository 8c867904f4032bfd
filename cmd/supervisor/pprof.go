package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// pprofEnv names the opt-in profiling endpoint of the master: set it to a
// loopback host:port (SUPERVISOR_PPROF=127.0.0.1:6060) and `supervisor run`
// serves net/http/pprof there. Workers ignore it; unset, nothing listens.
const pprofEnv = "SUPERVISOR_PPROF"

// startPprof serves /debug/pprof/ on the address in SUPERVISOR_PPROF, if
// any, for the life of the process. Only loopback addresses are accepted:
// profiles expose memory contents. A failure to listen (the port is taken,
// say by the old master during an upgrade) is logged and serving goes on.
func startPprof(log zerolog.Logger) error {
	addr := os.Getenv(pprofEnv)
	if addr == "" {
		return nil
	}
	if err := checkLoopback(addr); err != nil {
		return fmt.Errorf("%s=%q: %w", pprofEnv, addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Warn().Err(err).Str("addr", addr).Msg("pprof: cannot listen; profiling disabled")
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // heap, allocs, goroutine, mutex, block, ...
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info().Str("addr", ln.Addr().String()).Msg("pprof: serving /debug/pprof/")
	return nil
}

// checkLoopback accepts host:port whose host is a loopback IP or localhost.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("the pprof address must be on loopback (127.0.0.1:PORT)")
	}
	return nil
}
