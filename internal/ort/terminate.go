package ort

import (
	"context"
	"fmt"
	"unsafe"

	onnxruntime "github.com/yalue/onnxruntime_go"
)

// exec runs ORT on the wrapped values, with run options that terminate
// the run when ctx ends (a context that never ends gets none: no C
// allocation on the common path).
func (s *Session) exec(ctx context.Context, ins, outs []onnxruntime.Value) error {
	if len(ins) == 0 {
		if err := s.runBound(ctx, outs); err != nil { // noinputs.go
			return fmt.Errorf("model %q: %w", s.name, err)
		}
		return nil
	}
	ro, release, err := terminateOn(ctx)
	if err != nil {
		return fmt.Errorf("model %q: %w", s.name, err)
	}
	defer release()
	if err := s.sess.RunWithOptions(ins, outs, ro); err != nil {
		return fmt.Errorf("model %q: %w", s.name, runFailure(ctx, err))
	}
	return nil
}

// runWithBinding runs the session on the OrtIoBinding binding, with run
// options that terminate the run when ctx ends. onnxruntime_go's
// RunWithBinding takes no run options, so this makes its OrtApi call
// itself (outbind_c.go), on the session's and the options' C handles
// (handles.go).
func (s *Session) runWithBinding(ctx context.Context, binding unsafe.Pointer) error {
	api, err := loadedAPI()
	if err != nil {
		return fmt.Errorf("could not reach the ONNX Runtime C API: %w", err)
	}
	session, err := sessionHandle(s.sess)
	if err != nil {
		return err
	}
	ro, release, err := terminateOn(ctx)
	if err != nil {
		return err
	}
	defer release()
	options, err := runOptionsHandle(ro)
	if err != nil {
		return err
	}
	if err := runWithBinding(api, session, options, binding); err != nil {
		return runFailure(ctx, err)
	}
	return nil
}

// runFailure says why ORT failed a run: the cause of ctx's end when it
// ended (ORT's own message, "Exiting due to terminate flag being set",
// says less than why the flag was set), else ORT's error.
func runFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return fmt.Errorf("ONNX Runtime failed: %w", err)
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
