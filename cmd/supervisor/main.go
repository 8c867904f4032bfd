// Command supervisor serves ONNX models with a master process, CPU prep
// workers and inference workers. See README.md and docs/.
//
//	supervisor [run] [-c FILE]     serve (the default command)
//	supervisor check [-c FILE]     validate the config and print the effective one
//	supervisor status [-c FILE] [--json] [--watch]
//	supervisor reload [-c FILE]    re-read the config; wait until it serves
//	supervisor upgrade [-c FILE]   hand over to the binary now on disk
//	supervisor stop [-c FILE]      drain and stop a running instance
//	supervisor version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cloudflare/tableflip"
	"github.com/rs/zerolog"

	"github.com/supervisor-dev/supervisor/affinity"
	"github.com/supervisor-dev/supervisor/configs"
	"github.com/supervisor-dev/supervisor/supervisor"
	"github.com/supervisor-dev/supervisor/supervisor/config"
	"github.com/supervisor-dev/supervisor/supervisor/config/modelcheck"
	"github.com/supervisor-dev/supervisor/supervisor/config/plan"
	"github.com/supervisor-dev/supervisor/supervisor/control"
	"github.com/supervisor-dev/supervisor/supervisor/fdlimit"
	"github.com/supervisor-dev/supervisor/supervisor/hostcheck"
	"github.com/supervisor-dev/supervisor/supervisor/unitstop"
	"github.com/supervisor-dev/supervisor/worker"
	"github.com/supervisor-dev/supervisor/worker/infer"
	"github.com/supervisor-dev/supervisor/worker/prep"
)

// usage is also the man page's source: help2man (scripts/manpage) reads
// `supervisor --help` and `supervisor --version`, so keep its "Usage:"
// and "Commands:" headings.
const usage = `Usage: supervisor [command] [flags]

Commands:
  run      serve (default)                  -c FILE
  check    validate a config, print it      -c FILE
  status   show the workers of an instance  -c FILE | --runtime-dir DIR, --json,
           --watch [--interval 2s]
  reload   re-read the config (as SIGHUP)   -c FILE | --runtime-dir DIR
  upgrade  restart on the binary on disk    -c FILE | --runtime-dir DIR
           without dropping a request (as SIGUSR2)
  stop     drain and stop an instance       -c FILE | --runtime-dir DIR
  gpus     list the GPUs NVML sees, and the driver
  version  print the version
`

func main() {
	// Millisecond timestamps: lifecycle events (spawn, ready, drain) are
	// often milliseconds apart.
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	cmd, args := "run", os.Args[1:]
	// A command, or --help/--version alone (help2man's questions); other
	// flags first mean run.
	if len(args) > 0 && args[0] != "" && (args[0][0] != '-' || args[0] == "--help" || args[0] == "-h" || args[0] == "--version") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "run":
		err = run(args)
	case "check":
		err = check(args)
	case "status":
		err = showStatus(args)
	case "reload":
		err = reload(args)
	case "upgrade":
		err = upgrade(args)
	case "stop":
		err = stop(args)
	case "gpus":
		err = gpus(args)
	case "version", "--version":
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
	// status only
	watch    bool
	interval time.Duration
}

func parseFlags(name string, args []string) (*cliFlags, error) {
	f := &cliFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.fs.StringVar(&f.config, "c", "", "config file (default: the embedded configs/default.yaml)")
	f.fs.StringVar(&f.runtimeDir, "runtime-dir", "", "runtime directory of the instance (overrides the config)")
	f.fs.BoolVar(&f.json, "json", false, "machine-readable output")
	if name == "status" {
		f.fs.BoolVar(&f.watch, "watch", false, "refresh in place until interrupted")
		f.fs.DurationVar(&f.interval, "interval", 2*time.Second, "refresh interval of --watch")
	}
	if err := f.fs.Parse(args); err != nil {
		return nil, err
	}
	if f.fs.NArg() > 0 {
		return nil, fmt.Errorf("%s: unexpected arguments %q", name, f.fs.Args())
	}
	return f, nil
}

// loadConfig reads -c FILE (or the embedded default) and resolves "auto".
func (f *cliFlags) loadConfig() (*config.Config, error) {
	var cfg *config.Config
	var err error
	if f.config == "" {
		cfg, err = config.ParseConfig(configs.Default, "<embedded default>")
	} else {
		cfg, err = config.LoadConfig(f.config)
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
	if err := startPprof(log); err != nil {
		return err
	}
	// tableflip passes the listeners and the control socket to the binary
	// an upgrade starts, and tells this one when that binary is ready.
	upg, err := tableflip.New(tableflip.Options{UpgradeTimeout: cfg.BootTimeout.Duration + 30*time.Second})
	if err != nil {
		return fmt.Errorf("set up upgrades: %w", err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	load := func() (*config.Config, error) {
		cfg, err := f.loadConfig()
		if err == nil {
			err = cfg.CheckFiles()
		}
		return cfg, err
	}
	return supervisor.New(cfg, log, supervisor.Options{Load: load, Upgrader: upg}).Run(ctx)
}

// newLogger logs JSON to stderr. The level is global so that a reload can
// change it.
func newLogger(level string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	zerolog.SetGlobalLevel(lvl)
	return zerolog.New(os.Stderr).With().Timestamp().
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
	if p := hostcheck.LibraryPath(cfg, os.Getenv("LD_LIBRARY_PATH")); p != "" {
		// The loader reads LD_LIBRARY_PATH once, at start: run check again
		// with the one GPU workers get, so that trying the providers finds
		// what they will. LibraryPath is "" the second time.
		return reexecWith("LD_LIBRARY_PATH", p)
	}
	out, err := cfg.YAML()
	if err != nil {
		return err
	}
	os.Stdout.Write(out)
	// What the unit (or a drop-in) must allow for a stop, printed even if
	// placement fails; the master warns when its unit does not allow it.
	fmt.Println("\n" + unitstop.Advice(cfg.StopBound()))
	plan, err := printPlan(cfg)
	if err != nil {
		return err
	}
	printFDLimit(cfg, plan)
	if err := cfg.CheckFiles(); err != nil {
		return err
	}
	report, err := hostcheck.Providers(cfg, plan)
	if report != nil {
		fmt.Print("\n" + report.String())
	}
	if err != nil {
		return err
	}
	if err := cfg.CheckOutputBindings(plan); err != nil {
		return err
	}
	if err := modelcheck.Load(cfg); err != nil {
		return err
	}
	for _, w := range modelcheck.WarmupWarnings(cfg) {
		fmt.Printf("\n# WARNING: %s\n", w)
	}
	fmt.Fprintln(os.Stderr, "supervisor: configuration is valid and every model loads")
	return nil
}

// printFDLimit prints, as a YAML comment, a warning when this shell's
// open-file limit is below what cfg may hold open at once (fdlimit); the
// master logs the same at start. Under systemd the unit's LimitNOFILE=
// is the one that counts.
func printFDLimit(cfg *config.Config, plan *affinity.Placement) {
	w, err := fdlimit.CheckProcess(fdlimit.ForPlan(cfg.WithPrepWorkers(cfg.Prep.Count(0)), plan))
	switch {
	case err != nil:
		fmt.Printf("\n# %v\n", err)
	case w != nil:
		fmt.Printf("\n# WARNING: %s\n", w)
	}
}

// printPlan prints where the master would run each worker on this host,
// as YAML comments so that the output of check stays a valid config.
func printPlan(cfg *config.Config) (*affinity.Placement, error) {
	host, err := plan.LoadHost("", affinity.NVML{})
	if err != nil {
		return nil, err
	}
	// An autoscaled pool starts at its first size, as the master does.
	placed, err := plan.Place(cfg.WithPrepWorkers(cfg.Prep.Count(0)), host)
	if err != nil {
		return nil, err
	}
	if err := plan.CheckCeiling(cfg, host); err != nil {
		return nil, err
	}
	fmt.Printf("\n# Placement on this host: %s\n", host.Describe())
	for _, line := range strings.Split(strings.TrimRight(placed.String(), "\n"), "\n") {
		fmt.Println("#  ", line)
	}
	return placed, nil
}

// reload asks the master to re-read its config and waits for the outcome.
// A config that does not load is the master's to report (it logs it and
// keeps serving), so only runtime_dir is needed here.
func reload(args []string) error {
	f, err := parseFlags("reload", args)
	if err != nil {
		return err
	}
	cfg := f.controlConfig()
	// An infer worker may boot three times in one reload: killed at
	// boot_timeout on a model, again without it, and, when that model
	// kept its previous config, once more with the rest of the change.
	wait := 3*cfg.BootTimeout.Duration + cfg.Workers.DrainTimeout.Duration + 30*time.Second
	resp, err := control.Call(cfg.RuntimeDir, "reload", wait)
	if err != nil {
		return fmt.Errorf("reload failed: %w", err)
	}
	r := resp.Result
	fmt.Fprintf(os.Stderr, "supervisor: reloaded in %s: generation %d serves (replaced %s; models changed in place %s; started %s; stopped %s)\n",
		r.Took, r.Generation, names(r.Replaced), names(r.ChangedInPlace), names(r.Started), names(r.Stopped))
	for _, u := range r.UnavailableModels {
		fmt.Fprintf(os.Stderr, "supervisor: model unavailable (the others serve): %s\n", u)
	}
	return nil
}

func names(ns []string) string {
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ", ")
}

// upgrade asks the master to start the binary now at its path; it returns
// once the new master serves and the old one has drained and exited.
func upgrade(args []string) error {
	f, err := parseFlags("upgrade", args)
	if err != nil {
		return err
	}
	cfg := f.controlConfig()
	wait := cfg.BootTimeout.Duration + 2*cfg.ShutdownTimeout.Duration + 90*time.Second
	resp, err := control.Call(cfg.RuntimeDir, "upgrade", wait)
	if err != nil {
		return fmt.Errorf("upgrade failed: %w", err)
	}
	fmt.Fprintf(os.Stderr, "supervisor: upgraded in %s: master pid %d serves; the old master drained and exited\n",
		resp.Result.Took, resp.Result.NewPID)
	return nil
}

// controlConfig is the config a control command uses to find the
// instance: the whole file when it loads, or else only its runtime_dir.
func (f *cliFlags) controlConfig() *config.Config {
	if cfg, err := f.loadConfig(); err == nil {
		return cfg
	}
	cfg := config.DefaultConfig()
	cfg.RuntimeDir = f.runtimeDir
	if cfg.RuntimeDir == "" && f.config != "" {
		cfg.RuntimeDir = config.RuntimeDirOf(f.config)
	}
	cfg.Resolve()
	return cfg
}

func stop(args []string) error {
	f, err := parseFlags("stop", args)
	if err != nil {
		return err
	}
	cfg := f.controlConfig()
	// The master answers once every worker is gone; allow for a full
	// drain, as long as the unit's TimeoutStopSec should.
	_, err = control.Call(cfg.RuntimeDir, "stop", unitstop.Needed(cfg.StopBound()))
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

// reexecWith replaces this process by a new run of its binary with the
// same arguments and key=value in its environment.
func reexecWith(key, value string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	env := []string{key + "=" + value}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, key+"=") {
			env = append(env, kv)
		}
	}
	return syscall.Exec(exe, os.Args, env)
}
