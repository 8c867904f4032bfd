package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/supervisor-dev/supervisor/supervisor/status"
)

// showStatus prints the instance's report: from the master over the control
// socket and from its scoreboard, which answers even when the master does
// not. --watch redraws it in place every --interval until interrupted.
func showStatus(args []string) error {
	f, err := parseFlags("status", args)
	if err != nil {
		return err
	}
	if f.interval <= 0 {
		return errors.New("status: --interval must be positive")
	}
	cfg := f.controlConfig()
	sr := &status.Reader{RuntimeDir: cfg.RuntimeDir, Timeout: 2 * time.Second}
	if !f.watch {
		r, err := sr.Read()
		if err != nil {
			return err
		}
		return printReport(r, f.json, false)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(stop)
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	for {
		if r, err := sr.Read(); err != nil {
			os.Stdout.WriteString("\033[H\033[2J" + "supervisor: " + err.Error() + "\n")
		} else if err := printReport(r, f.json, true); err != nil {
			return err
		}
		select {
		case <-tick.C:
		case <-stop:
			return nil
		}
	}
}

// printReport writes one report; clear first moves to the top of a
// cleared terminal, so --watch refreshes in place.
func printReport(r *status.Report, asJSON, clear bool) error {
	var buf bytes.Buffer
	if clear {
		buf.WriteString("\033[H\033[2J")
	}
	if asJSON {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		r.WriteText(&buf)
	}
	_, err := os.Stdout.Write(buf.Bytes())
	return err
}
