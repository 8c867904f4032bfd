// Package logtest holds what tests need to read a process's log while
// its goroutines still write it.
//
// Invariants:
//
//   - Buffer's Write and String may be called from any goroutines at
//     once; String returns every byte written before it was called.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a log sink that a server's goroutines may write to while a
// test reads it (a bytes.Buffer under a mutex).
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
