package budget

import "sync"

// atomicErr is an error set by one goroutine and read by others.
type atomicErr struct {
	mu  sync.Mutex
	err error
}

func (a *atomicErr) load() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *atomicErr) store(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.err = err
}
