package ops

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/torchlean-go/torchlean/driver"
)

// The launch queue: how ops reach a GPU without waiting for the driver.
//
// cuLaunchKernel costs the host microseconds, most of an op's cost on a GPU, and the Go work of
// an op around it (result buffer, argument pack, checks) about a microsecond more (BENCHMARKS.md
// has the figures). Each CUDA device therefore has a queue of commands (kernel launches, fills,
// device-to-device copies, and library calls: a function run with the context current, such as
// a cuFFT execution or a collective) that ops fill, and one issuing goroutine, locked to its OS
// thread with the device's context current, that hands them to the driver in queue order on the
// device's stream. An op returns once its command
// is queued, so the Go work of the next op overlaps the driver's work on this one, and the
// driver runs on a thread that does nothing else. This is not a channel round trip (which costs
// far more than a launch: driver/doc.go): nothing waits for an answer, the queue is a ring
// guarded by one uncontended mutex for the producers and two atomic counters.
//
// Ordering: every command reaches the device's stream in the order it was queued, and every
// other driver call that touches memory a queued command may use (uploads, downloads,
// guard-band fills, synchronization, freeing cached blocks) first waits until the queue has been
// issued (cudaBackend.enter) and then goes to the same stream, so it is ordered after those
// commands. A block returned to the allocator's cache can be handed to the next allocation at
// once: its next user's commands are queued after its last user's.
//
// Errors: a command that the driver refuses (a sticky device error, an invalid launch) fails
// the queue: later commands are dropped, and that error is returned by every later op, Sync and
// download of the device, as a lost device's sticky errors are (driver.ErrDeviceLost).
//
// The issuing goroutine spins for queueIdle after the queue empties (a training loop queues its
// next op within microseconds) and then exits, unlocking its thread; the next command starts a
// new one. TORCHLEAN_LAUNCH=sync turns the queue off (each op then calls the driver from its own
// goroutine and returns the launch's error itself); so does GOMAXPROCS < 2, where the spinning
// goroutine would take the only processor from the ops that feed it.

// queueLen is the number of commands a device's queue holds: about a millisecond of launches.
const queueLen = 256

// queueIdle is how long the issuing goroutine waits for new commands before it exits.
const queueIdle = 50 * time.Microsecond

// launchSync reports TORCHLEAN_LAUNCH=sync.
var launchSync = os.Getenv("TORCHLEAN_LAUNCH") == "sync"

// useQueue reports whether a new CUDA backend issues its commands through a launch queue.
func useQueue() bool { return !launchSync && runtime.GOMAXPROCS(0) >= 2 }

type commandKind uint8

const (
	cmdLaunch commandKind = iota // fn on grid x block with shared bytes and args
	cmdFill                      // count 32-bit words at dst set to value
	cmdCopy                      // count bytes from src to dst
	cmdCall                      // call(ctx, stream): a library's work on the stream (name names it)
)

// command is one driver call. A queued launch holds its parameter values as driver.Args.Values
// gives them (copied from the op's argument pack by set), so that it hands the issuing thread a
// few cache lines (the fields before args and the used part of args) rather than a whole
// driver.Args; a launch made at once passes the pack itself and leaves args unused.
type command struct {
	kind        commandKind
	nargs       uint8
	shared      uint32
	grid, block [3]uint32
	fn          driver.Function
	dst, src    driver.DevicePtr
	value       uint32
	count       uint64
	call        func(x *driver.Context, s driver.Stream) error
	name        string
	args        [driver.MaxArgs]uint64
}

// set makes c the command src with the parameter values vals (at most driver.MaxArgs).
func (c *command) set(src *command, vals []uint64) {
	c.kind, c.shared, c.grid, c.block, c.fn = src.kind, src.shared, src.grid, src.block, src.fn
	c.dst, c.src, c.value, c.count, c.call, c.name = src.dst, src.src, src.value, src.count, src.call, src.name
	c.nargs = uint8(copy(c.args[:], vals))
}

// launchQueue is the command ring of one device (see the comment at the top of this file).
type launchQueue struct {
	issue  func(c *command, args *driver.Args) error // makes the driver call of c (a launch's parameters in args); runs on the issuing goroutine
	bind   func() error                              // locks the issuing goroutine's thread with the context current
	unbind func()                                    // undoes bind
	idle   time.Duration                             // queueIdle (tests set 0 before first use, to make the goroutine come and go)
	// parked, when set (tests only), runs between the issuing goroutine's running.Store(false)
	// and its re-check of head: the place a preempted thread stops while a successor runs.
	parked func()

	// The producers' and the issuing goroutine's counters on cache lines of their own. Each side
	// reads the other's counter only when its own copy says it must wait (tailSeen: the ring
	// looks full; the issuing goroutine's copy of head: it looks empty), and the issuing
	// goroutine publishes tail once per tailBatch commands and whenever it catches up, so that
	// the two cache lines do not travel between the cores on every command.
	_        [64]byte
	mu       sync.Mutex    // serializes producers: filling a slot and advancing head
	head     atomic.Uint64 // commands queued
	tailSeen uint64        // a value tail had (under mu)
	running  atomic.Bool   // an issuing goroutine exists (or is about to)
	_        [64]byte
	tail     atomic.Uint64 // commands issued or dropped (published in batches)
	_        [64]byte

	failed atomic.Bool
	errMu  sync.Mutex
	err    error // the first failure, once failed is set

	ring [queueLen]command
}

func newLaunchQueue(issue func(*command, *driver.Args) error, bind func() error, unbind func()) *launchQueue {
	return &launchQueue{issue: issue, bind: bind, unbind: unbind, idle: queueIdle}
}

// slot returns the next free slot with q.mu held, waiting while the ring is full; the caller
// fills it and calls publish. It returns the queue's error, without a slot or the lock, once the
// queue has failed.
func (q *launchQueue) slot() (*command, error) {
	q.mu.Lock()
	if err := q.error(); err != nil {
		q.mu.Unlock()
		return nil, err
	}
	h := q.head.Load()
	if h-q.tailSeen >= queueLen {
		q.tailSeen = q.tail.Load()
		if h-q.tailSeen >= queueLen {
			waitUntil(func() bool { q.tailSeen = q.tail.Load(); return h-q.tailSeen < queueLen })
		}
	}
	return &q.ring[h%queueLen], nil
}

// publish queues the slot filled since slot, releases q.mu, and makes sure an issuing goroutine
// runs.
func (q *launchQueue) publish() {
	q.head.Add(1)
	q.mu.Unlock()
	if !q.running.Load() && q.running.CompareAndSwap(false, true) {
		go q.run()
	}
}

// drain waits until every command queued before the call has been issued and returns the
// queue's error, if any.
func (q *launchQueue) drain() error {
	h := q.head.Load()
	if q.tail.Load() < h {
		waitUntil(func() bool { return q.tail.Load() >= h })
	}
	return q.error()
}

// error returns the first failure of the queue, or nil.
func (q *launchQueue) error() error {
	if !q.failed.Load() {
		return nil
	}
	q.errMu.Lock()
	defer q.errMu.Unlock()
	return q.err
}

func (q *launchQueue) fail(err error) {
	q.errMu.Lock()
	defer q.errMu.Unlock()
	if q.err == nil {
		q.err = fmt.Errorf("ops: queued command failed, later ones dropped: %w", err)
		q.failed.Store(true)
	}
}

// run is the issuing goroutine: it issues the queued commands in order until the queue has been
// empty for queueIdle, then exits. Commands queued after a failure (or when the context cannot
// be bound) are dropped, not issued.
func (q *launchQueue) run() {
	err := q.bind()
	bound := err == nil
	if bound {
		defer q.unbind()
	} else {
		q.fail(err) // bind's error names the cause (device lost, context released)
	}
	scratch := new(driver.Args) // the launches' argument block, on the heap for the driver
	var idleSince time.Time
	spins := 0
	t := q.tail.Load()
	head, published := t, t // the issuing goroutine's copies of q.head and q.tail
	for {
		if t == head {
			if published != t { // caught up: every command so far is issued
				q.tail.Store(t)
				published = t
			}
			if head = q.head.Load(); t != head {
				continue
			}
			spins++
			if spins == 1 {
				idleSince = time.Now()
			} else if spins%64 == 0 && time.Since(idleSince) > q.idle {
				q.running.Store(false)
				if q.parked != nil {
					q.parked()
				}
				// A producer that queued after the check above either sees running false
				// and starts a new goroutine, or is seen here.
				if q.head.Load() == t || !q.running.CompareAndSwap(false, true) {
					return
				}
				spins = 0
				// Another issuing goroutine may have run and exited since the Store(false): its
				// published tail is the truth, and this goroutine's copies are stale.
				t = q.tail.Load()
				head, published = t, t
			}
			continue
		}
		spins = 0
		c := &q.ring[t%queueLen]
		if bound && !q.failed.Load() {
			if err := q.issue(c, scratch.SetValues(c.args[:c.nargs])); err != nil {
				q.fail(err)
			}
		}
		c.call = nil // a library call's closure is not kept alive by the ring
		t++
		if t%tailBatch == 0 {
			q.tail.Store(t)
			published = t
		}
	}
}

// tailBatch is how many commands the issuing goroutine issues between publications of tail
// (besides the one whenever it catches up with head).
const tailBatch = 8

// waitUntil spins until done reports true, yielding the processor after the first spins (the
// issuing goroutine needs no processor from its waiters, but other goroutines may) and sleeping
// between checks once the wait is long (a queue of kernels the GPU is far behind on).
func waitUntil(done func() bool) {
	for i := 0; !done(); i++ {
		switch {
		case i >= 2000:
			time.Sleep(20 * time.Microsecond)
		case i >= 100:
			runtime.Gosched()
		}
	}
}
