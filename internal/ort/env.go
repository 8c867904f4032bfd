package ort

import (
	"fmt"
	"sync"

	onnxruntime "github.com/yalue/onnxruntime_go"
)

// environment records the one ORT environment of the process. It is package
// state because ORT's is: onnxruntime_go keeps the loaded library and the
// OrtEnv in package variables, and a second InitializeEnvironment fails.
var environment struct {
	mu   sync.Mutex
	done bool
	path string
	err  error
}

// Init loads the ONNX Runtime shared library at libPath and creates the
// process's ORT environment. Only the first call does any work; later calls
// with the same path return the first call's result (nil, or the same
// error), and a later call with a different path is an error, since one
// process cannot load two ORT libraries. An empty libPath means
// FindLibrary's answer. The environment is never destroyed: sessions may
// live until the process exits.
func Init(libPath string) error {
	if libPath == "" {
		p, err := FindLibrary()
		if err != nil {
			return err
		}
		libPath = p
	}
	e := &environment
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.done {
		e.done, e.path = true, libPath
		onnxruntime.SetSharedLibraryPath(libPath)
		if err := onnxruntime.InitializeEnvironment(); err != nil {
			e.err = fmt.Errorf("could not initialise ONNX Runtime from %q: %w", libPath, err)
		}
		return e.err
	}
	if e.err == nil && e.path != libPath {
		return fmt.Errorf("could not initialise ONNX Runtime from %q: already initialised from %q in this process", libPath, e.path)
	}
	return e.err
}
