package imageinput

import (
	"fmt"

	"github.com/supervisor-dev/supervisor/shm"
)

// Stopper is asked before each image is decoded: Check returns why the
// request's work should stop (nil: go on), AtWork records the decode
// as at work until the Work's End.
type Stopper interface {
	Check() error
	AtWork() shm.Work
}

// StoppedError is a request whose images were not all decoded because its
// client had gone.
type StoppedError struct {
	Decoded, Total int
	Reason         error
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("stopped after decoding %d of %d images: %v", e.Decoded, e.Total, e.Reason)
}

func (e *StoppedError) Unwrap() error { return e.Reason }
