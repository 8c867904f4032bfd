package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/supervisor-dev/supervisor/internal/launch"
)

// apiKey is the key the well-behaved client sends; auth is on for the
// whole run, so the unauthenticated attack meets it.
const apiKey = "hostile-suite-key-0123456789abcdef"

// server is one running `supervisor run` under attack.
type server struct{ *launch.Server }

// serverOptions are what the suite varies between the full and the
// bounded run.
type serverOptions struct {
	bin, ortLib, modelsDir string
	budget                 int64         // limits.max_body_bytes_in_flight
	bodyTimeout            time.Duration // limits.body_timeout
	readTimeout            time.Duration // limits.read_timeout
	writeTimeout           time.Duration // limits.write_timeout (also bounds a gRPC stream's unread answers)
	grpcMaxConns           int           // grpc.max_connections
	prepWorkers            int
	maxBody                int64  // max_body_bytes
	squeezeNet             string // the shared SqueezeNet served as imageModel; "" = the MLP only
	answerModel            bool   // serve answerModel, for unread-answers
}

// suiteConfig is the config under attack: the MLP with batching,
// slowModel (one instance, for the hang-up attacks and the quick client:
// see hangup.go), and the
// shared SqueezeNet from encoded images (configs/squeezenet.yaml's
// preprocessing) when the options name it, API keys on, the shipped
// limits except the ones the options set.
func suiteConfig(o serverOptions, l launch.Layout) string {
	image := ""
	if o.squeezeNet != "" {
		image = fmt.Sprintf(`  - name: %s
    path: %s
    preprocess: {kind: image, width: 224, height: 224, resize: stretch, interpolation: bilinear,
      channel_order: BGR, scale: 1, mean: [0, 0, 0], std: [1, 1, 1], layout: NCHW, dtype: FP16,
      max_pixels: 40000000, max_images: 64}
`, imageModel, o.squeezeNet)
	}
	if o.answerModel {
		image += fmt.Sprintf("  - {name: %s, path: %s}\n", answerModel, filepath.Join(o.modelsDir, answerModel+".onnx"))
	}
	return fmt.Sprintf(`listen: 127.0.0.1:%d
runtime_dir: %s
onnxruntime_library: %s
shutdown_timeout: 10s
boot_timeout: 120s
max_body_bytes: %d
models:
  - {name: mlp, path: %s, batching: {max_batch_size: 8}}
%s%sprep:
  workers: %d
infer:
  workers: 1
  intra_op_threads: 1
placement:
  overcommit: true
limits:
  max_body_bytes_in_flight: %d
  body_timeout: %s
  read_timeout: %s
  write_timeout: %s
auth:
  api_keys: [%s]
metrics:
  listen: 127.0.0.1:%d
grpc:
  listen: 127.0.0.1:%d
  max_concurrent_streams: %d
  max_connections: %d
`, l.Port, l.RuntimeDir, o.ortLib, o.maxBody, filepath.Join(o.modelsDir, "mlp.onnx"), slowConfigItem(o.modelsDir), image, o.prepWorkers,
		o.budget, o.bodyTimeout, o.readTimeout, o.writeTimeout, apiKey, l.MetricsPort, l.GRPCPort, grpcMaxStreams, o.grpcMaxConns)
}

// grpcMaxStreams is grpc.max_concurrent_streams under attack (the
// shipped default): the stream flood opens this many per connection.
const grpcMaxStreams = 128

// grpcAddr is the gRPC listener's host:port.
func (s *server) grpcAddr() string { return fmt.Sprintf("127.0.0.1:%d", s.GRPCPort) }

// startServer writes the config, starts the binary and waits until
// /v2/health/ready answers 200 (within 120s, polling every 100ms).
func startServer(o serverOptions) (*server, error) {
	ls, err := launch.Start(launch.Options{Bin: o.bin, DirPattern: "hostile",
		Config: func(l launch.Layout) (string, error) { return suiteConfig(o, l), nil }})
	if err != nil {
		return nil, err
	}
	s := &server{ls}
	if err := s.WaitReady(120*time.Second, 100*time.Millisecond); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// prepPIDs are the prep workers serving now, from /status.json.
func (s *server) prepPIDs() ([]int, error) {
	resp, err := http.Get("http://" + s.MetricsAddr + "/status.json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Processes []struct {
			Role  string `json:"role"`
			PID   int    `json:"pid"`
			Stale bool   `json:"stale"`
		} `json:"processes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("status.json: %w", err)
	}
	var pids []int
	for _, p := range r.Processes {
		if p.Role == "prep" && !p.Stale && p.PID > 0 {
			pids = append(pids, p.PID)
		}
	}
	if len(pids) == 0 {
		return nil, errors.New("status.json lists no prep worker")
	}
	return pids, nil
}

// stop asks the master to stop (SIGTERM), kills it after 30s, and removes
// the run's directory.
func (s *server) stop() { s.Stop(30 * time.Second) }
