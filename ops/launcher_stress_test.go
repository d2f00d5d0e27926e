package ops

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/driver"
)

// checker is a stub issuer that checks the queue's invariants on every command: commands arrive
// exactly in queue order (c.count holds the command's index, set by the producer under q.mu),
// none skipped or issued twice, never two issue calls at once, the published tail never covers a
// command not yet issued, and the slot was not overwritten before its issue (its index is still
// the expected one).
type checker struct {
	q        *launchQueue
	next     atomic.Uint64 // index of the next command to issue (issued ones are < next)
	inIssue  atomic.Int32
	alive    atomic.Int32 // issuing goroutines between bind and unbind
	overlap  atomic.Int32 // binds seen while another goroutine was still bound (not an error by itself)
	binds    atomic.Int32
	failAt   uint64 // 1-based index+1 of the command to fail; 0 none
	bindFail atomic.Bool
	delay    func() time.Duration
	maxTail  atomic.Uint64
	errs     chan string
}

var errStress = errors.New("stress failure")

func newChecker(failAt uint64) *checker {
	c := &checker{failAt: failAt, errs: make(chan string, 100)}
	c.q = newLaunchQueue(c.issue, c.bind, func() { c.alive.Add(-1) })
	return c
}

func (c *checker) report(format string, args ...any) {
	select {
	case c.errs <- fmt.Sprintf(format, args...):
	default:
	}
}

func (c *checker) bind() error {
	if c.bindFail.Load() {
		return errors.New("bind failed")
	}
	if c.alive.Add(1) != 1 {
		c.overlap.Add(1)
	}
	c.binds.Add(1)
	return nil
}

func (c *checker) issue(cmd *command, _ *driver.Args) error {
	if c.inIssue.Add(1) != 1 {
		c.report("two issue calls at once")
	}
	defer c.inIssue.Add(-1)
	idx := cmd.count
	want := c.next.Load()
	if idx != want {
		c.report("issued command %d, want %d (skip, duplicate or overwritten slot)", idx, want)
	}
	if tl := c.q.tail.Load(); tl < c.maxTail.Load() {
		c.report("tail moved backwards: %d after %d (issuing %d)", tl, c.maxTail.Load(), idx)
	} else {
		c.maxTail.Store(tl)
	}
	if tl := c.q.tail.Load(); tl > idx {
		c.report("tail %d published while command %d not yet issued", tl, idx)
	}
	if hd := c.q.head.Load(); hd <= idx {
		c.report("command %d issued with head %d", idx, hd)
	}
	if c.delay != nil {
		if d := c.delay(); d > 0 {
			spinFor(d)
		}
	}
	if uint64(cmd.value) != uint32val(idx) {
		c.report("slot of %d changed during issue: value %d", idx, cmd.value)
	}
	c.next.Store(idx + 1)
	if c.failAt != 0 && idx+1 == c.failAt {
		return errStress
	}
	return nil
}

// uint32val is the value command i carries in its slot, checked when it is issued.
func uint32val(i uint64) uint64 { return uint64(uint32(i*2654435761 + 7)) }

// spinFor busy-waits d (sleeps past 50 us).
func spinFor(d time.Duration) {
	if d > 50*time.Microsecond {
		time.Sleep(d)
		return
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// push queues one command and returns its index.
func (c *checker) push() (uint64, error) {
	s, err := c.q.slot()
	if err != nil {
		return 0, err
	}
	h := c.q.head.Load()
	if h >= queueLen && c.q.error() == nil && c.failAt == 0 && !c.bindFail.Load() {
		if n := c.next.Load(); n+queueLen <= h {
			c.report("slot %d refilled while command %d (same slot) not issued: next=%d", h, h-queueLen, n)
		}
	}
	if tl := c.q.tail.Load(); h-tl >= queueLen {
		c.report("slot handed out with head %d tail %d", h, tl)
	}
	s.kind, s.count, s.value = cmdFill, h, uint32(uint32val(h))
	c.q.publish()
	return h, nil
}

// drainChecked drains with a watchdog and checks that command idx (queued before) was issued.
func (c *checker) drainChecked(t *testing.T, idx uint64, pushed bool) error {
	done := make(chan error, 1)
	go func() { done <- c.q.drain() }()
	select {
	case err := <-done:
		if err == nil && pushed && c.next.Load() <= idx {
			c.report("drain returned nil with command %d not issued (next %d)", idx, c.next.Load())
		}
		return err
	case <-time.After(20 * time.Second):
		c.report("drain hung: head %d tail %d next %d running %v", c.q.head.Load(), c.q.tail.Load(), c.next.Load(), c.q.running.Load())
		return errors.New("hang")
	}
}

// finish reports the first ten invariant violations the checker saw.
func (c *checker) finish(t *testing.T) {
	t.Helper()
	close(c.errs)
	n := 0
	for e := range c.errs {
		if n < 10 {
			t.Error(e)
		}
		n++
	}
}

// TestLaunchQueueStress: many producers, bursty (gaps around queueIdle so the issuing goroutine
// exits and restarts often), each draining now and then; random issue delays.
func TestLaunchQueueStress(t *testing.T) {
	for _, run := range []struct {
		workers int
		idle    time.Duration
	}{{1, queueIdle}, {2, queueIdle}, {3, queueIdle}, {8, queueIdle}, {32, queueIdle}, {2, 0}, {8, 0}} {
		// Idle 0: the issuing goroutine exits as soon as the ring is empty, so exits, restarts and
		// a stalled goroutine resuming after its successor ran all happen (the last once issued
		// commands twice and moved tail backwards).
		workers := run.workers
		c := newChecker(0)
		c.q.idle = run.idle
		c.delay = func() time.Duration {
			if rand.IntN(50) == 0 {
				return time.Duration(rand.IntN(30)) * time.Microsecond
			}
			return 0
		}
		var wg sync.WaitGroup
		var hung atomic.Bool
		for w := range workers {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), 1))
				for i := 0; i < 3000 && !hung.Load(); i++ {
					idx, err := c.push()
					if err != nil {
						c.report("push: %v", err)
						return
					}
					switch k := r.IntN(100); {
					case k < 10:
						if err := c.drainChecked(t, idx, true); err != nil {
							c.report("drain: %v", err)
							hung.Store(true)
							return
						}
					case k < 13:
						time.Sleep(time.Duration(r.IntN(120)) * time.Microsecond)
					case k < 15:
						spinFor(time.Duration(r.IntN(100)) * time.Microsecond)
					}
				}
			})
		}
		// concurrent drains by goroutines that queue nothing
		stop := make(chan struct{})
		var dw sync.WaitGroup
		for range 2 {
			dw.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					h := c.q.head.Load()
					if err := c.drainChecked(t, h-1, h > 0); err != nil {
						c.report("drain: %v", err)
						return
					}
					jitter()
				}
			})
		}
		wg.Wait()
		close(stop)
		dw.Wait()
		if err := c.drainChecked(t, c.q.head.Load()-1, true); err != nil {
			t.Fatal(err)
		}
		if c.next.Load() != c.q.head.Load() || c.q.tail.Load() != c.q.head.Load() {
			t.Errorf("after drain: next %d tail %d head %d", c.next.Load(), c.q.tail.Load(), c.q.head.Load())
		}
		waitStopped(t, c)
		t.Logf("workers %d: %d commands, %d binds, %d bind overlaps", workers, c.q.head.Load(), c.binds.Load(), c.overlap.Load())
		c.finish(t)
	}
}

// waitStopped waits until the issuing goroutine has exited, and checks that it left tail at head.
func waitStopped(t *testing.T, c *checker) {
	deadline := time.Now().Add(10 * time.Second)
	for c.q.running.Load() || c.alive.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("issuing goroutine never exits: running %v alive %d", c.q.running.Load(), c.alive.Load())
		}
		time.Sleep(100 * time.Microsecond)
	}
	if c.q.tail.Load() != c.q.head.Load() {
		t.Errorf("idle with tail %d head %d", c.q.tail.Load(), c.q.head.Load())
	}
}

// TestLaunchQueueStressFull: a slow issuer, producers always at a full ring.
func TestLaunchQueueStressFull(t *testing.T) {
	c := newChecker(0)
	c.delay = func() time.Duration { return time.Duration(rand.IntN(3)) * time.Microsecond }
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for i := 0; i < 2*queueLen; i++ {
				idx, err := c.push()
				if err != nil {
					c.report("push: %v", err)
					return
				}
				if i%97 == 0 {
					if err := c.drainChecked(t, idx, true); err != nil {
						c.report("drain: %v", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := c.drainChecked(t, c.q.head.Load()-1, true); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, c)
	c.finish(t)
}

// TestLaunchQueueStressFailure: a failure at a random point mid-stream; every later push or drain
// sees it, nothing after it is issued, nothing before it is lost, nothing hangs.
func TestLaunchQueueStressFailure(t *testing.T) {
	for round := range 40 {
		failAt := uint64(1 + rand.IntN(2000))
		c := newChecker(failAt)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := 0; i < 700; i++ {
					idx, err := c.push()
					if err != nil {
						if !errors.Is(err, errStress) {
							c.report("push: %v", err)
						}
						if idx2 := c.next.Load(); idx2 != failAt {
							c.report("push failed with next %d, failAt %d", idx2, failAt)
						}
						return
					}
					if (i+w)%17 == 0 {
						err := c.drainChecked(t, idx, true)
						if err != nil && !errors.Is(err, errStress) {
							c.report("drain: %v", err)
							return
						}
						if err != nil && idx+1 < failAt && c.next.Load() < idx+1 {
							c.report("drain failed but command %d not issued", idx)
						}
					}
					if i%50 == 0 {
						time.Sleep(time.Duration(rand.IntN(80)) * time.Microsecond)
					}
				}
			})
		}
		wg.Wait()
		err := c.drainChecked(t, c.q.head.Load()-1, false)
		h := c.q.head.Load()
		if h >= failAt {
			if !errors.Is(err, errStress) {
				t.Errorf("round %d: drain %v with %d queued, failAt %d", round, err, h, failAt)
			}
			if c.next.Load() != failAt {
				t.Errorf("round %d: %d issued, failAt %d", round, c.next.Load(), failAt)
			}
		} else if err != nil || c.next.Load() != h {
			t.Errorf("round %d: drain %v, %d issued of %d", round, err, c.next.Load(), h)
		}
		waitStopped(t, c)
		c.finish(t)
	}
}

// TestLaunchQueueStressBindFailure: bind fails after some restarts; drain never hangs.
func TestLaunchQueueStressBindFailure(t *testing.T) {
	for range 30 {
		c := newChecker(0)
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for i := 0; i < 400; i++ {
					if i == 200 {
						c.bindFail.Store(true)
					}
					idx, err := c.push()
					if err != nil {
						return
					}
					if i%31 == 0 {
						c.drainChecked(t, idx, false)
					}
					if i%40 == 0 {
						time.Sleep(100 * time.Microsecond)
					}
				}
			})
		}
		wg.Wait()
		c.drainChecked(t, c.q.head.Load()-1, false)
		waitStopped(t, c)
		c.finish(t)
	}
}

// jitter sleeps up to 20 us, so that drains land at varied points of the issuing.
func jitter() { time.Sleep(time.Duration(rand.IntN(20)) * time.Microsecond) }

// TestLaunchQueueStaleTailAfterIdle: the issuing goroutine A stops right after its
// running.Store(false) (as a preempted thread would); a producer starts goroutine B, which
// issues the new commands, goes idle and exits; then A resumes and wins its CAS. A must take up
// the queue from the published tail: with its own stale copies it issued B's commands a second
// time, after a drain had returned, and moved tail backwards.
func TestLaunchQueueStaleTailAfterIdle(t *testing.T) {
	c := newChecker(0)
	var calls atomic.Int32
	parked, release := make(chan struct{}), make(chan struct{})
	c.q.parked = func() {
		if calls.Add(1) == 1 { // the first goroutine's first idle exit only
			close(parked)
			<-release
		}
	}
	if _, err := c.push(); err != nil { // command 0, issued by A
		t.Fatal(err)
	}
	<-parked
	for range 9 { // commands 1-9: the first push starts B
		if _, err := c.push(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.q.drain(); err != nil {
		t.Fatal(err)
	}
	for c.alive.Load() != 1 || c.q.running.Load() { // B has gone idle and exited
		time.Sleep(100 * time.Microsecond)
	}
	close(release)
	time.Sleep(20 * time.Millisecond)
	waitStopped(t, c)
	c.finish(t)
}
