package budget

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestRandomWalksGiveEverythingBack drives a budget like a prep worker's
// with workers taking random steps at once: reserve, wait (with a
// deadline, or a client that goes, or a cancel racing the admission),
// grow, shrink, release (twice, sometimes from another goroutine), a fault that
// panics while holding a charge, and a worker killed mid-answer: its
// charge released by the request's owner while the worker still grows
// it. A checker asserts the invariants all along (bytes within rooms,
// charges within places, inner lanes within outer); at the end every
// lane holds nothing and queues nothing. Seeded, so a failure repeats.
func TestRandomWalksGiveEverythingBack(t *testing.T) {
	seeds, workers, steps := 6, 8, 300
	if testing.Short() {
		seeds, steps = 2, 100
	}
	for seed := range uint64(3 * seeds) {
		b, walked := layout(seed)
		stop := make(chan struct{})
		checked := make(chan error, 1)
		go func() { checked <- checkUntil(b, stop) }()
		var wg sync.WaitGroup
		for w := range uint64(workers) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				walk(rand.New(rand.NewPCG(seed, w)), b, walked, steps)
			}()
		}
		wg.Wait()
		close(stop)
		if err := <-checked; err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, l := range b.lanes {
			if s := l.State(); s != (State{}) {
				t.Fatalf("seed %d: after every worker released, %s holds %+v", seed, l.Name, s)
			}
		}
	}
}

// layout is the budget seed walks, and the lanes its charges take: a
// prep worker's (lanes), a body budget (bodies: its heir lane holds room
// back), or the master's body budget, whose answers share the heir's
// lane from within it (admission.Bodies).
func layout(seed uint64) (*Budget, []*Lane) {
	switch seed % 3 {
	case 1:
		b, all, small, large := bodies()
		return b, []*Lane{all, small, large}
	case 2:
		all := &Lane{Name: "bodies", Room: 80}
		small := &Lane{Name: "small bodies", Within: all}
		large := &Lane{Name: "large bodies", Room: 70, Within: all, Heir: true}
		answers := &Lane{Name: "answers", Within: large}
		return New(all, small, large, answers), []*Lane{small, large, answers}
	}
	b, small, large, answers := lanes()
	return b, []*Lane{small, large, answers}
}

var errFault = errors.New("a fault in the work")

// walk takes steps random steps in b's lanes and releases what it holds.
func walk(r *rand.Rand, b *Budget, lanes []*Lane, steps int) {
	var held []*Charge
	var owners sync.WaitGroup // goroutines releasing charges handed to them
	defer owners.Wait()
	pick := func() *Charge { return held[r.IntN(len(held))] }
	size := func() int64 { return r.Int64N(130) - 5 } // some negative, some over any room
	for range steps {
		l := lanes[r.IntN(len(lanes))]
		switch r.IntN(8) {
		case 0: // reserve without waiting
			if c, err := b.Reserve(size(), l); err == nil {
				held = append(held, c)
			}
		case 1: // wait, within a deadline
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(2000))*time.Microsecond)
			if c, err := b.Wait(ctx, size(), l, nil); err == nil {
				held = append(held, c)
			}
			cancel()
		case 2: // wait for a client that goes after a few polls
			polls := r.IntN(3)
			gone := func() error {
				if polls--; polls < 0 {
					return errFault
				}
				return nil
			}
			if c, err := b.Wait(context.Background(), size(), l, gone); err == nil {
				held = append(held, c)
			}
		case 3: // a cancel racing the admission
			ctx, cancel := context.WithCancel(context.Background())
			go cancel()
			if c, err := b.Wait(ctx, size(), l, nil); err == nil {
				held = append(held, c)
			}
		case 4: // grow, or shrink (part of the work's memory dropped)
			if len(held) > 0 && r.IntN(3) == 0 {
				pick().Shrink(size())
			} else if len(held) > 0 {
				_ = pick().Grow(size())
			}
		case 5: // release, maybe twice
			if len(held) > 0 {
				i := r.IntN(len(held))
				held[i].Release()
				if r.IntN(2) == 0 {
					held[i].Release()
				}
				held = append(held[:i], held[i+1:]...)
			}
		case 6: // a fault while holding a charge
			func() {
				defer func() { _ = recover() }()
				c, err := b.Reserve(size(), l)
				if err != nil {
					return
				}
				defer c.Release()
				_ = c.Grow(size())
				panic(errFault)
			}()
		case 7: // a worker killed mid-answer: the owner releases while it grows
			c, err := b.Reserve(size(), l)
			if err != nil {
				continue
			}
			owners.Add(1)
			go func() { defer owners.Done(); c.Release() }()
			for range 3 {
				_ = c.Grow(size())
			}
		}
	}
	for _, c := range held {
		c.Release()
	}
}

// checkUntil checks b's invariants until stop is closed, and returns the
// first broken one.
func checkUntil(b *Budget, stop <-chan struct{}) error {
	for {
		if err := check(b); err != nil {
			return err
		}
		select {
		case <-stop:
			return check(b)
		case <-time.After(50 * time.Microsecond):
		}
	}
}

// check asserts, at one instant, that each lane's bytes and charges are
// within its room and places, and its inner lanes' bytes within its own.
func check(b *Budget) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	inner := map[*Lane]int64{}
	for _, l := range b.lanes {
		if l.Within != nil {
			inner[l.Within] += l.bytes
		}
	}
	for _, l := range b.lanes {
		switch {
		case l.bytes < 0 || l.in < 0:
			return fmt.Errorf("%s holds %d bytes in %d charges", l.Name, l.bytes, l.in)
		case (l.Room > 0 || l.Within == nil) && l.bytes > l.Room:
			return fmt.Errorf("%s holds %d bytes, room %d", l.Name, l.bytes, l.Room)
		case l.Places > 0 && l.in > l.Places:
			return fmt.Errorf("%s holds %d charges, places %d", l.Name, l.in, l.Places)
		case inner[l] > l.bytes:
			return fmt.Errorf("lanes within %s hold %d bytes, it %d", l.Name, inner[l], l.bytes)
		}
	}
	return nil
}
