package launch

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Layout is where a Server lives, given to Options.Config to render the
// YAML from.
type Layout struct {
	Dir         string // the temp dir holding config, log and runtime dir
	RuntimeDir  string // Dir/run: for the config's runtime_dir
	Port        int    // free loopback port for listen
	MetricsPort int    // free loopback port for metrics.listen
	GRPCPort    int    // free loopback port for grpc.listen
}

// Options say what to start.
type Options struct {
	// Bin is the supervisor binary.
	Bin string
	// DirPattern is the os.MkdirTemp pattern of Dir ("" is "supervisor").
	DirPattern string
	// ConfigName is the config's file name in Dir ("" is "supervisor.yaml").
	ConfigName string
	// Config renders the YAML config. It may write more files under
	// l.Dir (warm-up inputs, say); an error aborts Start.
	Config func(l Layout) (string, error)
	// KeepDir makes Stop remove only RuntimeDir, leaving the log and the
	// config for reading.
	KeepDir bool
}

// Server is one running `supervisor run`.
type Server struct {
	Layout
	Addr        string // public host:port
	MetricsAddr string // metrics host:port
	Log         string // the file the process's stdout and stderr go to
	ConfigPath  string

	cmd     *exec.Cmd
	keepDir bool
	exited  chan struct{}
	waitErr error // cmd.Wait's answer; read only after exited is closed
}

// Start writes the config and starts the binary; see the package doc.
func Start(o Options) (*Server, error) {
	if o.DirPattern == "" {
		o.DirPattern = "supervisor"
	}
	if o.ConfigName == "" {
		o.ConfigName = "supervisor.yaml"
	}
	dir, err := os.MkdirTemp("", o.DirPattern)
	if err != nil {
		return nil, fmt.Errorf("could not create the supervisor's temp dir: %w", err)
	}
	s, err := start(o, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func start(o Options, dir string) (*Server, error) {
	l, err := layout(dir)
	if err != nil {
		return nil, err
	}
	cfg, err := o.Config(l)
	if err != nil {
		return nil, err
	}
	s := &Server{Layout: l, Addr: fmt.Sprintf("127.0.0.1:%d", l.Port),
		MetricsAddr: fmt.Sprintf("127.0.0.1:%d", l.MetricsPort),
		Log:         filepath.Join(dir, "supervisor.log"), ConfigPath: filepath.Join(dir, o.ConfigName),
		keepDir: o.KeepDir, exited: make(chan struct{})}
	if err := os.WriteFile(s.ConfigPath, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("could not write the supervisor config: %w", err)
	}
	return s, s.exec(o.Bin)
}

func layout(dir string) (Layout, error) {
	port, err := freePort()
	if err != nil {
		return Layout{}, err
	}
	mport, err := freePort()
	if err != nil {
		return Layout{}, err
	}
	gport, err := freePort()
	if err != nil {
		return Layout{}, err
	}
	return Layout{Dir: dir, RuntimeDir: filepath.Join(dir, "run"), Port: port, MetricsPort: mport, GRPCPort: gport}, nil
}

// exec starts the process and the goroutine that reaps it.
func (s *Server) exec(bin string) error {
	logf, err := os.Create(s.Log)
	if err != nil {
		return fmt.Errorf("could not create the supervisor log: %w", err)
	}
	s.cmd = exec.Command(bin, "run", "-c", s.ConfigPath)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("could not start %q: %w", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	return nil
}

// PID is the master's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Exited is closed once the process has exited and been reaped.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Alive reports whether the process still runs.
func (s *Server) Alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM, kills after grace, waits for the exit and removes
// Dir (RuntimeDir only with Options.KeepDir).
func (s *Server) Stop(grace time.Duration) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	if s.keepDir {
		_ = os.RemoveAll(s.RuntimeDir)
		return
	}
	_ = os.RemoveAll(s.Dir)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("could not find a free loopback port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
