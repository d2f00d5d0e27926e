package ops

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/driver"
)

// fakeIssuer records the commands a launch queue issues (by their value field) and counts the
// binds of issuing goroutines; fail makes the command with that value fail.
type fakeIssuer struct {
	mu      sync.Mutex
	issued  []uint32
	bound   atomic.Int32 // issuing goroutines bound and not yet unbound
	binds   atomic.Int32
	fail    uint32
	bindErr error
	delay   time.Duration
}

func (f *fakeIssuer) queue() *launchQueue {
	return newLaunchQueue(f.issue, f.bind, func() { f.bound.Add(-1) })
}

func (f *fakeIssuer) bind() error {
	if f.bindErr != nil {
		return f.bindErr
	}
	if f.bound.Add(1) != 1 {
		panic("two issuing goroutines at once")
	}
	f.binds.Add(1)
	return nil
}

// errFakeLaunch is the failure of fakeIssuer's fail command.
var errFakeLaunch = errors.New("fake launch failure")

func (f *fakeIssuer) issue(c *command, _ *driver.Args) error {
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if f.fail != 0 && c.value == f.fail {
		return errFakeLaunch
	}
	f.mu.Lock()
	f.issued = append(f.issued, c.value)
	f.mu.Unlock()
	return nil
}

func (f *fakeIssuer) commands() []uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]uint32(nil), f.issued...)
}

func push(q *launchQueue, v uint32) error {
	c, err := q.slot()
	if err != nil {
		return err
	}
	c.kind, c.value = cmdFill, v
	q.publish()
	return nil
}

// TestLaunchQueueOrder queues from many goroutines at once, more commands than the ring holds:
// every command is issued exactly once, each goroutine's in the order it queued them, by one
// issuing goroutine at a time, and drain returns only when all are issued.
func TestLaunchQueueOrder(t *testing.T) {
	f := &fakeIssuer{}
	q := f.queue()
	const workers, each = 8, 3 * queueLen
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if err := push(q, uint32(w<<16|i+1)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := q.drain(); err != nil {
		t.Fatal(err)
	}
	got := f.commands()
	if len(got) != workers*each {
		t.Fatalf("%d commands issued after drain, want %d", len(got), workers*each)
	}
	next := make([]int, workers)
	for _, v := range got {
		w, i := int(v>>16), int(v&0xffff)
		if i != next[w]+1 {
			t.Fatalf("worker %d: command %d issued after %d", w, i, next[w])
		}
		next[w] = i
	}
}

// TestLaunchQueueIdle checks that the issuing goroutine exits (unbinding its thread) once the
// queue has been idle, and that the next command starts a new one.
func TestLaunchQueueIdle(t *testing.T) {
	f := &fakeIssuer{}
	q := f.queue()
	for round := 1; round <= 3; round++ {
		if err := push(q, uint32(round)); err != nil {
			t.Fatal(err)
		}
		if err := q.drain(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for q.running.Load() || f.bound.Load() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: issuing goroutine still running after 5 s idle", round)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if got := f.commands(); len(got) != 3 || f.binds.Load() != 3 {
		t.Errorf("issued %v with %d binds, want 3 commands and 3 binds", got, f.binds.Load())
	}
}

// TestLaunchQueueFull queues more than the ring holds into a slow issuer: producers wait for
// room instead of overwriting queued commands.
func TestLaunchQueueFull(t *testing.T) {
	f := &fakeIssuer{delay: 20 * time.Microsecond}
	q := f.queue()
	for i := range queueLen + 50 {
		if err := push(q, uint32(i+1)); err != nil {
			t.Fatal(err)
		}
		if n := q.head.Load() - q.tail.Load(); n > queueLen {
			t.Fatalf("%d commands queued, ring of %d", n, queueLen)
		}
	}
	if err := q.drain(); err != nil {
		t.Fatal(err)
	}
	for i, v := range f.commands() {
		if v != uint32(i+1) {
			t.Fatalf("command %d issued as %d", i+1, v)
		}
	}
}

// TestLaunchQueueFailure makes one command fail: the commands after it are dropped, and every
// later slot and drain returns that failure.
func TestLaunchQueueFailure(t *testing.T) {
	f := &fakeIssuer{fail: 3}
	q := f.queue()
	for i := uint32(1); i <= 5; i++ {
		err := push(q, i)
		switch {
		case i <= 3 && err != nil:
			t.Fatalf("push %d: %v (the failure cannot be known yet)", i, err)
		case err != nil && !errors.Is(err, errFakeLaunch):
			// pushes 4 and 5 race with the issuer: each succeeds or sees the failure
			t.Fatalf("push %d: %v, want success or the failure", i, err)
		}
	}
	err := q.drain()
	if !errors.Is(err, errFakeLaunch) {
		t.Fatalf("drain: %v, want the failure", err)
	}
	if got := f.commands(); len(got) != 2 {
		t.Errorf("issued %v, want 1 and 2 only", got)
	}
	if err := push(q, 6); err == nil {
		t.Error("push after the failure succeeded")
	}
	if err := q.drain(); err == nil {
		t.Error("second drain lost the failure")
	}
}

// TestLaunchQueueBindFailure: when the issuing goroutine cannot bind the context (a lost
// device), nothing is issued and drain returns the cause instead of waiting forever.
func TestLaunchQueueBindFailure(t *testing.T) {
	f := &fakeIssuer{bindErr: errors.New("device lost")}
	q := f.queue()
	for i := uint32(1); i <= 3; i++ {
		_ = push(q, i) // the first succeeds; later ones may already see the failure
	}
	if err := q.drain(); !errors.Is(err, f.bindErr) {
		t.Fatalf("drain: %v, want the bind failure", err)
	}
	if got := f.commands(); len(got) != 0 {
		t.Errorf("issued %v without a bound context", got)
	}
}
