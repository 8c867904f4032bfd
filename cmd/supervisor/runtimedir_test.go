package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMasterRefusesRuntimeDirNotItsOwn pre-creates the runtime dir the way
// an attacker on the same host would (owned by another user, a symlink,
// group-writable): the real master exits 1 at once with an error that
// names the dir, and creates nothing in it.
func TestMasterRefusesRuntimeDirNotItsOwn(t *testing.T) {
	lib := needORT(t)
	cases := map[string]func(t *testing.T, dir string){
		"group-writable": func(t *testing.T, dir string) { mustMkdir(t, dir, 0o770) },
		"symlink": func(t *testing.T, dir string) {
			target := dir + ".target"
			mustMkdir(t, target, 0o700)
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		},
	}
	if os.Getuid() == 0 {
		cases["owned by nobody"] = func(t *testing.T, dir string) {
			mustMkdir(t, dir, 0o700)
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			parent, err := os.MkdirTemp("", "sv")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(parent) })
			dir := filepath.Join(parent, "run")
			plant(t, dir)
			cfg := filepath.Join(t.TempDir(), "supervisor.yaml")
			ports := freePorts(t, 2)
			yaml := fmt.Sprintf("listen: 127.0.0.1:%d\nruntime_dir: %s\nonnxruntime_library: %s\nmodels:\n  - {name: mlp, path: %s}\nmetrics:\n  listen: 127.0.0.1:%d\ngrpc:\n  listen: \"\"\n",
				ports[0], dir, lib, filepath.Join(modelsDir, "mlp.onnx"), ports[1])
			if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, binPath, "run", "-c", cfg).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("master on a %s runtime dir: %v, want exit status 1\n%s", name, err, out)
			}
			if !strings.Contains(string(out), dir) {
				t.Fatalf("the error does not name the runtime dir %s:\n%s", dir, out)
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Fatalf("the master created %d entries in a dir it refused", len(entries))
			}
		})
	}
}

func mustMkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}
