package ort

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// libRelPath is where scripts/fetch-ort (run by `make setup`) puts the
// library, relative to the repository root.
const libRelPath = "third_party/onnxruntime/libonnxruntime.so.1"

// installedRelPath is where `make install` puts it, relative to the
// directory above the installed binary (PREFIX).
const installedRelPath = "lib/supervisor/libonnxruntime.so.1"

// FindLibrary returns the path of libonnxruntime.so.1, looking in order at:
// $ORT_LIBRARY; <dir of the executable>/../lib/supervisor/ (`make
// install`); <dir of the executable>/../third_party/onnxruntime/ (bin/ in
// the repository); and third_party/onnxruntime/ in the
// working directory or any of its parents, so that `go test` run in any
// package directory finds the repository's copy.
func FindLibrary() (string, error) {
	if p := os.Getenv("ORT_LIBRARY"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("ORT_LIBRARY=%q: %w", p, err)
		}
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		for _, rel := range []string{installedRelPath, libRelPath} {
			if p := filepath.Join(filepath.Dir(exe), "..", rel); fileExists(p) {
				return filepath.Clean(p), nil
			}
		}
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if p := filepath.Join(dir, libRelPath); fileExists(p) {
				return p, nil
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return "", errors.New("could not find the ONNX Runtime library " + libRelPath +
		": run `make setup` in the repository, or set ORT_LIBRARY to the path of libonnxruntime.so.1")
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
