package ops

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Collectives: the ranks of a group (one device each) combine buffers. A Comm is one rank's
// handle; every rank of the group calls the same collectives in the same order with buffers of
// the same lengths, as with NCCL and torch.distributed.
//
// Two implementations hide behind Comm:
//   - host collectives, over an Exchanger that moves host slices between the ranks: LocalGroup
//     (ranks as goroutines of one process) or a network transport (the dist package's TCP one).
//     They work on any device (a CUDA buffer goes through host memory) and are always exact.
//   - NCCL collectives on CUDA devices (collective_nccl.go), queued on the device's stream
//     through its launch queue as library commands, so they are ordered with the kernels.
//
// # Exact mode
//
// An exact reduction of the ranks' values x_0[e], ..., x_{R-1}[e] of element e is
// ReduceSumByColumn of the (R, ...) matrix of the ranks' buffers stacked in rank order (for
// R <= cpu.ColChunk = 64 ranks: ((0 + x_0[e]) + x_1[e]) + ... + x_{R-1}[e], each sum rounded to
// float32), and for ReduceAvg that sum divided by float32(R) (ReduceMeanByColumn, one rounded
// division). Every element's result depends only on its own column, so computing it per chunk
// of elements (the reduce-scatter of the NCCL path: each rank gathers one chunk of every rank in
// rank order, reduces it, then all-gathers the chunks) or over the whole buffer gives the same
// bits. The host collectives compute it on the CPU; the NCCL exact path runs the same ops
// function on the GPU, whose bits equal the CPU's by the arithmetic contract. So an exact run is
// bit-identical run to run, on any number of processes, and to the same ranks simulated on the
// CPU. The fast mode (NCCL only) is NCCL's own all-reduce and reduce-scatter, whose summation
// order depends on NCCL's algorithm and topology.

// ReduceOp is the reduction of AllReduce and ReduceScatter.
type ReduceOp int

const (
	ReduceSum ReduceOp = iota // the sum over the ranks
	ReduceAvg                 // the sum divided by the number of ranks
)

// String returns "sum" or "avg".
func (o ReduceOp) String() string {
	switch o {
	case ReduceSum:
		return "sum"
	case ReduceAvg:
		return "avg"
	}
	return fmt.Sprintf("ReduceOp(%d)", int(o))
}

// DefaultCollectiveTimeout is how long a rank waits for the others in one collective (or, on
// CUDA, in Comm.Wait) before it gives up and aborts the group, when CommOptions.Timeout is 0.
const DefaultCollectiveTimeout = 5 * time.Minute

// CommOptions configure a Comm.
type CommOptions struct {
	// Exact selects the exact (fixed-order) reductions on NCCL communicators; host collectives
	// are always exact.
	Exact bool
	// Timeout bounds every wait for the other ranks (0: DefaultCollectiveTimeout): a collective
	// of the host path, Comm.Wait on CUDA. When it passes, the group is aborted and every rank
	// gets an error.
	Timeout time.Duration
}

// An Exchanger moves host data between the ranks of a group: the wire of the host collectives.
// Implementations must be safe for use by one goroutine per rank.
type Exchanger interface {
	// AllGather gives data to every rank and returns every rank's data, in rank order (this
	// rank's included). It neither modifies nor keeps data past the call, and the caller must
	// not modify the returned slices. It returns an error, rather than waiting forever, when a
	// rank fails or does not call within the exchanger's timeout, and then aborts the group.
	AllGather(data []float32) ([][]float32, error)
	// Abort ends the group with err: every pending and later AllGather of every rank fails.
	Abort(err error)
}

// ErrAborted is wrapped by the errors of collectives on a group that was aborted (by a rank's
// Abort, a timeout, or a rank that left).
var ErrAborted = errors.New("ops: collective group aborted")

// Comm is one rank's communicator. Its collectives combine the buffers of every rank of the
// group; a Comm is used by one goroutine at a time.
type Comm struct {
	rank, size int
	dev        *Device
	o          CommOptions
	impl       collective
}

// collective is the implementation of a Comm (host or NCCL). bufs are live, on c.dev, and in use.
type collective interface {
	allReduce(c *Comm, bufs []*Buffer, n int, op ReduceOp) error
	broadcast(c *Comm, bufs []*Buffer, n int, root int) error
	reduceScatter(c *Comm, x *Buffer, op ReduceOp) (*Buffer, error)
	allGather(c *Comm, x *Buffer) (*Buffer, error)
	wait(c *Comm) error
	abort(err error)
	close() error
}

// NewHostComm returns rank's communicator (0 <= rank < size) of a group whose ranks exchange
// host data through x; its buffers live on d (any device).
func NewHostComm(d *Device, rank, size int, x Exchanger, o CommOptions) (*Comm, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if x == nil {
		return nil, errors.New("ops: host communicator: nil exchanger")
	}
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("ops: host communicator: rank %d of %d", rank, size)
	}
	o.Exact = true
	return &Comm{rank: rank, size: size, dev: d, o: o.withDefaults(), impl: &hostColl{x: x}}, nil
}

func (o CommOptions) withDefaults() CommOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultCollectiveTimeout
	}
	return o
}

// Rank returns the communicator's rank.
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of ranks of the group.
func (c *Comm) Size() int { return c.size }

// Device returns the device of the communicator's buffers.
func (c *Comm) Device() *Device { return c.dev }

// Exact reports whether the reductions are the exact ones (see the comment at the top of
// collective.go).
func (c *Comm) Exact() bool { return c.o.Exact }

// Timeout returns the bound on a wait for the other ranks.
func (c *Comm) Timeout() time.Duration { return c.o.Timeout }

// prepare checks and uses bufs for the collective op, returning their total length.
func (c *Comm) prepare(op string, bufs []*Buffer) (int, error) {
	if c == nil || c.impl == nil {
		return 0, fmt.Errorf("ops: %s: nil communicator", op)
	}
	n := 0
	for i, b := range bufs {
		if err := b.useIn(op); err != nil {
			doneAll(bufs[:i]...)
			return 0, err
		}
		if b.dev != c.dev {
			doneAll(bufs[:i+1]...)
			return 0, fmt.Errorf("ops: %s: buffer %d is on %s, the communicator's device is %s", op, i, b.dev, c.dev)
		}
		n += b.n
	}
	return n, nil
}

// AllReduce replaces every rank's bufs, taken together as one vector (their elements in order),
// with the reduction over the ranks (op: sum or average; exact or NCCL's, see CommOptions).
// Every rank passes buffers of the same lengths. Unlike other ops it writes into its operands
// (as NCCL's in-place all-reduce): no other goroutine may use them meanwhile. On CUDA the work
// is queued (Wait waits for it); on the host path it is done when AllReduce returns.
func (c *Comm) AllReduce(op ReduceOp, bufs ...*Buffer) error {
	if op != ReduceSum && op != ReduceAvg {
		return fmt.Errorf("ops: all_reduce: unknown reduction %v", op)
	}
	n, err := c.prepare("all_reduce", bufs)
	if err != nil {
		return err
	}
	defer doneAll(bufs...)
	if n == 0 {
		return nil
	}
	return opErr("all_reduce", c.impl.allReduce(c, bufs, n, op))
}

// Broadcast replaces every rank's bufs (one vector, as for AllReduce) with root's. It writes
// into its operands on the ranks other than root.
func (c *Comm) Broadcast(root int, bufs ...*Buffer) error {
	n, err := c.prepare("broadcast", bufs)
	if err != nil {
		return err
	}
	defer doneAll(bufs...)
	if root < 0 || root >= c.size {
		return fmt.Errorf("ops: broadcast: root %d of %d ranks", root, c.size)
	}
	if n == 0 {
		return nil
	}
	return opErr("broadcast", c.impl.broadcast(c, bufs, n, root))
}

// ReduceScatter returns, on rank r, a new buffer holding elements [r*m, (r+1)*m) of the
// reduction over the ranks of x, where m = x.Len()/Size() (x.Len() must be a multiple of Size()).
func (c *Comm) ReduceScatter(x *Buffer, op ReduceOp) (*Buffer, error) {
	if op != ReduceSum && op != ReduceAvg {
		return nil, fmt.Errorf("ops: reduce_scatter: unknown reduction %v", op)
	}
	n, err := c.prepare("reduce_scatter", []*Buffer{x})
	if err != nil {
		return nil, err
	}
	defer x.done()
	if n%c.size != 0 {
		return nil, fmt.Errorf("ops: reduce_scatter: %d elements do not split into %d equal parts", n, c.size)
	}
	if n == 0 {
		return newBuffer(c.dev, 0)
	}
	out, err := c.impl.reduceScatter(c, x, op)
	return out, opErr("reduce_scatter", err)
}

// AllGather returns a new buffer of Size()*x.Len() elements: rank r's x at [r*n, (r+1)*n).
func (c *Comm) AllGather(x *Buffer) (*Buffer, error) {
	n, err := c.prepare("all_gather", []*Buffer{x})
	if err != nil {
		return nil, err
	}
	defer x.done()
	if n == 0 {
		return newBuffer(c.dev, 0)
	}
	out, err := c.impl.allGather(c, x)
	return out, opErr("all_gather", err)
}

// Wait waits until the collectives queued so far have completed, at most Timeout: past it (or
// when NCCL reports a failed peer) the communicator is aborted and Wait returns an error
// wrapping ErrAborted. Host collectives complete before they return, so there Wait only
// synchronizes the device.
func (c *Comm) Wait() error {
	if c == nil || c.impl == nil {
		return errors.New("ops: wait: nil communicator")
	}
	return c.impl.wait(c)
}

// Abort ends the group: this rank's pending collectives and every later one of every rank fail
// with an error wrapping ErrAborted (and err). It may be called from any goroutine; a rank that
// gives up calls it so that the others do not wait for their timeout.
func (c *Comm) Abort(err error) {
	if c != nil && c.impl != nil {
		if err == nil {
			err = errors.New("aborted")
		}
		c.impl.abort(fmt.Errorf("%w: rank %d: %w", ErrAborted, c.rank, err))
	}
}

// Close frees the communicator (after its queued work on CUDA).
func (c *Comm) Close() error {
	if c == nil || c.impl == nil {
		return nil
	}
	return c.impl.close()
}

// hostColl is the host implementation: exact reductions on the CPU over an Exchanger.
type hostColl struct{ x Exchanger }

// gatherAll downloads bufs as one vector, exchanges it and checks that every rank sent n
// elements (want < 0: any length).
func (h *hostColl) gatherAll(bufs []*Buffer, n, want int) ([][]float32, error) {
	flat := make([]float32, 0, n)
	for _, b := range bufs {
		v, err := b.Float32s()
		if err != nil {
			return nil, err
		}
		flat = append(flat, v...)
	}
	all, err := h.x.AllGather(flat)
	if err != nil {
		return nil, err
	}
	if want >= 0 {
		for r, v := range all {
			if len(v) != want {
				err := fmt.Errorf("rank %d has %d elements, this rank %d", r, len(v), want)
				h.x.Abort(fmt.Errorf("%w: %w", ErrAborted, err))
				return nil, err
			}
		}
	}
	return all, nil
}

// writeFlat uploads v into bufs, taken as one vector.
func writeFlat(bufs []*Buffer, v []float32) error {
	off := 0
	for _, b := range bufs {
		if b.n > 0 {
			if err := b.dev.be.upload(b.mem, v[off:off+b.n]); err != nil {
				return err
			}
		}
		off += b.n
	}
	return nil
}

// exactReduce returns elements [lo, hi) of the exact reduction (see the top of this file) of the
// ranks' vectors, all in rank order, computed on the CPU.
func exactReduce(all [][]float32, lo, hi int, op ReduceOp) ([]float32, error) {
	r, m := len(all), hi-lo
	if m == 0 {
		return []float32{}, nil
	}
	stack := make([]float32, 0, r*m)
	for _, v := range all {
		stack = append(stack, v[lo:hi]...)
	}
	x, err := FromFloat32(cpuDevice, stack)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	reduce := ReduceSumByColumn
	if op == ReduceAvg {
		reduce = ReduceMeanByColumn
	}
	y, err := reduce(x, r, m)
	if err != nil {
		return nil, err
	}
	defer y.Release()
	return y.Float32s()
}

func (h *hostColl) allReduce(c *Comm, bufs []*Buffer, n int, op ReduceOp) error {
	all, err := h.gatherAll(bufs, n, n)
	if err != nil {
		return err
	}
	v, err := exactReduce(all, 0, n, op)
	if err != nil {
		return err
	}
	return writeFlat(bufs, v)
}

func (h *hostColl) broadcast(c *Comm, bufs []*Buffer, n int, root int) error {
	var send []*Buffer
	if c.rank == root {
		send = bufs
	}
	all, err := h.gatherAll(send, n, -1)
	if err != nil {
		return err
	}
	if len(all[root]) != n {
		err := fmt.Errorf("root %d has %d elements, this rank %d", root, len(all[root]), n)
		h.x.Abort(fmt.Errorf("%w: %w", ErrAborted, err))
		return err
	}
	if c.rank == root {
		return nil
	}
	return writeFlat(bufs, all[root])
}

func (h *hostColl) reduceScatter(c *Comm, x *Buffer, op ReduceOp) (*Buffer, error) {
	all, err := h.gatherAll([]*Buffer{x}, x.n, x.n)
	if err != nil {
		return nil, err
	}
	m := x.n / c.size
	v, err := exactReduce(all, c.rank*m, (c.rank+1)*m, op)
	if err != nil {
		return nil, err
	}
	return FromFloat32(c.dev, v)
}

func (h *hostColl) allGather(c *Comm, x *Buffer) (*Buffer, error) {
	all, err := h.gatherAll([]*Buffer{x}, x.n, x.n)
	if err != nil {
		return nil, err
	}
	return FromFloat32(c.dev, slices.Concat(all...))
}

func (h *hostColl) wait(c *Comm) error { return c.dev.Sync() }
func (h *hostColl) abort(err error)    { h.x.Abort(err) }
func (h *hostColl) close() error       { return nil }

// LocalGroup is an Exchanger for ranks that are goroutines of one process (the CPU simulation of
// a data-parallel group, or several CUDA devices without NCCL): each AllGather hands the slices
// over without copying. Rank r's exchanges are matched by count: the k-th AllGather of every rank
// forms round k.
type LocalGroup struct {
	size    int
	timeout time.Duration

	mu      sync.Mutex
	calls   []int // exchanges started, per rank
	rounds  map[int]*localRound
	err     error
	aborted chan struct{}
}

type localRound struct {
	data    [][]float32
	arrived []bool
	in, out int
	full    chan struct{}
}

// NewLocalGroup returns a group of size ranks whose exchanges wait at most timeout (0:
// DefaultCollectiveTimeout) for the other ranks.
func NewLocalGroup(size int, timeout time.Duration) (*LocalGroup, error) {
	if size < 1 {
		return nil, fmt.Errorf("ops: local group of %d ranks", size)
	}
	if timeout <= 0 {
		timeout = DefaultCollectiveTimeout
	}
	return &LocalGroup{size: size, timeout: timeout, calls: make([]int, size),
		rounds: map[int]*localRound{}, aborted: make(chan struct{})}, nil
}

// Size returns the number of ranks.
func (g *LocalGroup) Size() int { return g.size }

// Rank returns rank r's Exchanger (0 <= r < Size()); nil for another r.
func (g *LocalGroup) Rank(r int) Exchanger {
	if r < 0 || r >= g.size {
		return nil
	}
	return localRank{g, r}
}

// Abort ends the group with err (the first abort's error is kept).
func (g *LocalGroup) Abort(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		if !errors.Is(err, ErrAborted) {
			err = fmt.Errorf("%w: %w", ErrAborted, err)
		}
		g.err = err
		close(g.aborted)
	}
}

// Err returns the error the group was aborted with, or nil.
func (g *LocalGroup) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

type localRank struct {
	g *LocalGroup
	r int
}

func (x localRank) Abort(err error) { x.g.Abort(err) }

func (x localRank) AllGather(data []float32) ([][]float32, error) {
	g := x.g
	g.mu.Lock()
	if g.err != nil {
		g.mu.Unlock()
		return nil, g.err
	}
	k := g.calls[x.r]
	g.calls[x.r]++
	rd := g.rounds[k]
	if rd == nil {
		rd = &localRound{data: make([][]float32, g.size), arrived: make([]bool, g.size), full: make(chan struct{})}
		g.rounds[k] = rd
	}
	rd.data[x.r], rd.arrived[x.r] = data, true
	if rd.in++; rd.in == g.size {
		close(rd.full)
	}
	g.mu.Unlock()
	t := time.NewTimer(g.timeout)
	defer t.Stop()
	select {
	case <-rd.full:
	case <-g.aborted:
		return nil, g.Err()
	case <-t.C:
		g.mu.Lock()
		var missing []int
		for r, ok := range rd.arrived {
			if !ok {
				missing = append(missing, r)
			}
		}
		g.mu.Unlock()
		if len(missing) > 0 { // else the last rank arrived just as the timer fired
			g.Abort(fmt.Errorf("exchange %d: rank(s) %v did not arrive within %v", k, missing, g.timeout))
			return nil, g.Err()
		}
	}
	g.mu.Lock()
	if rd.out++; rd.out == g.size {
		delete(g.rounds, k)
	}
	g.mu.Unlock()
	return slices.Clone(rd.data), nil
}
