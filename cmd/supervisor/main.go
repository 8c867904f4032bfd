// Command supervisor serves ONNX models with a master process, CPU prep
// workers and inference workers. See README.md.
//
//	supervisor [run] [-c FILE]     serve (the default command)
//	supervisor check [-c FILE]     validate the config and print the effective one
//	supervisor status [-c FILE] [--json]
//	supervisor stop [-c FILE]      drain and stop a running instance
//	supervisor version
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/configs"
	"github.com/supervisor-dev/supervisor/supervisor"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/infer"
	"github.com/supervisor-dev/supervisor/worker/prep"
)

const usage = `usage: supervisor [command] [flags]

commands:
  run      serve (default)                  -c FILE
  check    validate a config, print it      -c FILE
  status   show the workers of an instance  -c FILE | --runtime-dir DIR, --json
  stop     drain and stop an instance       -c FILE | --runtime-dir DIR
  version  print the version
`

func main() {
	// Millisecond timestamps: lifecycle events (spawn, ready, drain) are
	// often milliseconds apart.
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	cmd, args := "run", os.Args[1:]
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "run":
		err = run(args)
	case "check":
		err = check(args)
	case "status":
		err = status(args)
	case "stop":
		err = stop(args)
	case "version":
		fmt.Println("supervisor", supervisor.Version)
	case "worker":
		err = runWorker()
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		err = fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		os.Exit(1)
	}
}

// cliFlags are the flags every command shares.
type cliFlags struct {
	fs         *flag.FlagSet
	config     string
	runtimeDir string
	json       bool
}

func parseFlags(name string, args []string) (*cliFlags, error) {
	f := &cliFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.fs.StringVar(&f.config, "c", "", "config file (default: the embedded configs/default.yaml)")
	f.fs.StringVar(&f.runtimeDir, "runtime-dir", "", "runtime directory of the instance (overrides the config)")
	f.fs.BoolVar(&f.json, "json", false, "machine-readable output")
	if err := f.fs.Parse(args); err != nil {
		return nil, err
	}
	if f.fs.NArg() > 0 {
		return nil, fmt.Errorf("%s: unexpected arguments %q", name, f.fs.Args())
	}
	return f, nil
}

// loadConfig reads -c FILE (or the embedded default) and resolves "auto".
func (f *cliFlags) loadConfig() (*supervisor.Config, error) {
	var cfg *supervisor.Config
	var err error
	if f.config == "" {
		cfg, err = supervisor.ParseConfig(configs.Default, "<embedded default>")
	} else {
		cfg, err = supervisor.LoadConfig(f.config)
	}
	if err != nil {
		return nil, err
	}
	if f.runtimeDir != "" {
		cfg.RuntimeDir = f.runtimeDir
	}
	cfg.Resolve()
	return cfg, nil
}

func run(args []string) error {
	f, err := parseFlags("run", args)
	if err != nil {
		return err
	}
	cfg, err := f.loadConfig()
	if err != nil {
		return err
	}
	if err := cfg.CheckFiles(); err != nil {
		return err
	}
	log := newLogger(cfg.LogLevel)
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	return supervisor.New(cfg, log, "").Run(ctx)
}

func newLogger(level string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	return zerolog.New(os.Stderr).Level(lvl).With().Timestamp().
		Str("role", "master").Int("pid", os.Getpid()).Logger()
}

func check(args []string) error {
	f, err := parseFlags("check", args)
	if err != nil {
		return err
	}
	cfg, err := f.loadConfig()
	if err != nil {
		return err
	}
	out, err := cfg.YAML()
	if err != nil {
		return err
	}
	os.Stdout.Write(out)
	if err := cfg.CheckFiles(); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "supervisor: configuration is valid")
	return nil
}

func status(args []string) error {
	f, err := parseFlags("status", args)
	if err != nil {
		return err
	}
	cfg, err := f.loadConfig()
	if err != nil {
		return err
	}
	resp, err := supervisor.Control(cfg.RuntimeDir, "status", 5*time.Second)
	if err != nil {
		return err
	}
	if f.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(resp.Status)
	}
	printStatus(resp.Status)
	return nil
}

func printStatus(st *supervisor.Status) {
	state := "not ready"
	if st.Ready {
		state = "ready"
	}
	fmt.Printf("master pid %d, %s, listening on %s, up %s\n\n", st.PID, state, st.Listen,
		time.Since(st.Started).Truncate(time.Second))
	fmt.Printf("%-10s %-6s %-8s %-11s %-9s %s\n", "WORKER", "ROLE", "PID", "STATE", "RESTARTS", "SOCKET")
	for _, w := range st.Workers {
		pid := "-"
		if w.PID > 0 {
			pid = fmt.Sprint(w.PID)
		}
		fmt.Printf("%-10s %-6s %-8s %-11s %-9d %s\n", w.Name, w.Role, pid, w.State, w.Restarts, w.Socket)
	}
}

func stop(args []string) error {
	f, err := parseFlags("stop", args)
	if err != nil {
		return err
	}
	cfg, err := f.loadConfig()
	if err != nil {
		return err
	}
	// The master answers once every worker is gone; allow for a full drain.
	_, err = supervisor.Control(cfg.RuntimeDir, "stop", 2*cfg.ShutdownTimeout.Duration+30*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "supervisor: stopped")
	return nil
}

func runWorker() error {
	spec, err := worker.SpecFromEnv()
	if err != nil {
		return err
	}
	rt := worker.Start(spec)
	switch spec.Role {
	case worker.RoleInfer:
		return infer.Run(rt)
	case worker.RolePrep:
		return prep.Run(rt)
	default:
		return errors.New("unknown worker role " + string(spec.Role))
	}
}
