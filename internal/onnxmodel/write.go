package onnxmodel

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultSeed is the seed WriteAll builds seeded models from.
const DefaultSeed = 1

// Files names the models WriteAll writes, by file name.
func Files() map[string]*Model {
	return map[string]*Model{
		"default.onnx": Default(DefaultSeed),
		"mlp.onnx":     MLP(DefaultSeed),
		"types.onnx":   Types(),
		"fixed.onnx":   Fixed(),
	}
}

// ResNet50Files names the ResNet-50-class models (FP32 and FP16, 100 and
// 50 MB), which WriteAll leaves out: `genmodels -resnet50` writes them
// where they are measured (scripts/gpu-check).
func ResNet50Files() map[string]*Model {
	return map[string]*Model{
		"resnet50.onnx":      ResNet50(DefaultSeed, false),
		"resnet50-fp16.onnx": ResNet50(DefaultSeed, true),
	}
}

// WriteAll writes every model in Files into dir, creating dir if needed.
func WriteAll(dir string) error { return Write(dir, Files()) }

// Write writes files (file name -> model) into dir, creating dir if
// needed. Each file is written to a temporary name and renamed into
// place, so a reader never sees a half-written model.
func Write(dir string, files map[string]*Model) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("could not create model directory %q: %w", dir, err)
	}
	for name, m := range files {
		b, err := m.Marshal()
		if err != nil {
			return fmt.Errorf("could not encode %s: %w", name, err)
		}
		if err := writeFileAtomic(filepath.Join(dir, name), b); err != nil {
			return err
		}
	}
	return nil
}

func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("could not write %q: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("could not write %q: %w", path, err)
	}
	return nil
}
