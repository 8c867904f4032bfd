package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigWarmup(t *testing.T) {
	c := mustParseConfig(t, "strict_readiness: true\nmodels:\n  - {name: a, path: a.onnx}\n  - {name: b, path: b.onnx, warmup: none}\n"+
		"  - {name: c, path: c.onnx, warmup: zeros}\n  - {name: d, path: c.onnx, warmup: req/d.json}\n", "t.yaml")
	if !c.StrictReadiness {
		t.Error("strict_readiness: true not read")
	}
	_, err := ParseConfig([]byte("models:\n  - name: a\n    path: a.onnx\n    warmup: zero\n"), "t.yaml")
	if !errors.Is(err, ErrInvalidConfig) || !strings.HasPrefix(err.Error(), `t.yaml:4: models[0].warmup: "zero" is not a warm-up policy`) {
		t.Errorf("bad warmup: %v, want a ConfigError at line 4", err)
	}
}

func TestConfigCheckFilesWarmup(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(model, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := mustParseConfig(t, "models:\n  - name: m\n    path: "+model+"\n    warmup: "+dir+"/nope.json\n", "t.yaml")
	stubORTLibrary(t, c, dir)
	err := c.CheckFiles()
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `t.yaml:4: models[0].warmup: model "m": cannot use warm-up request file`) {
		t.Errorf("CheckFiles() = %v, want a missing warm-up file at line 4", err)
	}
}
