package ort

import (
	"context"
	"fmt"

	onnxruntime "github.com/yalue/onnxruntime_go"
)

// exec runs ORT on the wrapped values, with run options that terminate
// the run when ctx ends (a context that never ends gets none: no C
// allocation on the common path).
func (s *Session) exec(ctx context.Context, ins, outs []onnxruntime.Value) error {
	if len(ins) == 0 {
		if err := s.runBound(outs); err != nil { // noinputs.go
			return fmt.Errorf("model %q: ONNX Runtime failed: %w", s.name, err)
		}
		return nil
	}
	ro, release, err := terminateOn(ctx)
	if err != nil {
		return fmt.Errorf("model %q: %w", s.name, err)
	}
	defer release()
	err = s.sess.RunWithOptions(ins, outs, ro)
	if err != nil && ctx.Err() != nil {
		// ORT's own message ("Exiting due to terminate flag being set")
		// says less than why the flag was set.
		return fmt.Errorf("model %q: %w", s.name, context.Cause(ctx))
	}
	if err != nil {
		return fmt.Errorf("model %q: ONNX Runtime failed: %w", s.name, err)
	}
	return nil
}

// terminateOn returns run options whose terminate flag is set when ctx
// ends, and the function that releases them once the run has returned; nil
// options when ctx never ends. release waits for a terminate in progress,
// so the options are never written after they are freed.
func terminateOn(ctx context.Context) (*onnxruntime.RunOptions, func(), error) {
	if ctx.Done() == nil {
		return nil, func() {}, nil
	}
	ro, err := onnxruntime.NewRunOptions()
	if err != nil {
		return nil, nil, fmt.Errorf("could not create ONNX Runtime run options: %w", err)
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = ro.Terminate()
	})
	release := func() {
		if !stop() {
			<-fired
		}
		_ = ro.Destroy()
	}
	return ro, release, nil
}
