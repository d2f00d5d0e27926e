package ops

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/torchlean-go/torchlean/driver"
)

// NCCL communicators on CUDA devices. Every collective is one or more library commands on the
// device's launch queue (cudaBackend.libraryCall): NCCL queues its kernels on the device's stream
// after the kernels queued before it (the backward pass that made the gradients) and before
// those queued after it (the optimizer step). A collective waits for its peers on the GPU, not in
// Go: Comm.Wait is where a rank notices a dead peer (NCCL's asynchronous error, or the timeout),
// and aborts the communicator (ncclCommAbort), which ends the pending NCCL kernels.
//
// Not verified on a GPU in this change (none was available): the calling convention is checked
// against a C stand-in in driver, the arithmetic of the exact path is ops' own column reduction.

// CommID names a group of NCCL ranks: an ncclUniqueId, made by one rank (NewCommID) and handed
// to the others (in one process by value, across processes by a rendezvous).
type CommID [driver.NCCLUniqueIDBytes]byte

var ncclLib struct {
	once sync.Once
	lib  *driver.NCCL
	err  error
}

// loadNCCL opens libnccl once per process (driver.LoadNCCL: TORCHLEAN_NCCL or the usual places).
func loadNCCL() (*driver.NCCL, error) {
	ncclLib.once.Do(func() { ncclLib.lib, ncclLib.err = driver.LoadNCCL() })
	return ncclLib.lib, ncclLib.err
}

// NCCLAvailable reports whether libnccl loads, with the reason when it does not.
func NCCLAvailable() (bool, error) {
	_, err := loadNCCL()
	return err == nil, err
}

// NewCommID makes the id of a new NCCL group (ncclGetUniqueId). It needs libnccl but no GPU.
func NewCommID() (CommID, error) {
	lib, err := loadNCCL()
	if err != nil {
		return CommID{}, fmt.Errorf("ops: NCCL: %w", err)
	}
	id, err := lib.UniqueID()
	return CommID(id), err
}

// NewNCCLComm returns rank's communicator (0 <= rank < size) of the NCCL group id on the CUDA
// device d. It blocks until every rank of the group has called it (NCCL's bootstrap gives up
// after its own timeout). The exact mode needs ncclSend/ncclRecv (NCCL 2.7), the average of the
// fast mode ncclAvg (NCCL 2.10).
func NewNCCLComm(d *Device, id CommID, rank, size int, o CommOptions) (*Comm, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	g, ok := d.be.(*cudaBackend) // the one place a collective needs to know the backend
	if !ok {
		return nil, fmt.Errorf("ops: NCCL communicator: %s is not a CUDA device (use NewHostComm)", d)
	}
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("ops: NCCL communicator: rank %d of %d", rank, size)
	}
	lib, err := loadNCCL()
	if err != nil {
		return nil, fmt.Errorf("ops: NCCL: %w", err)
	}
	if o.Exact && !lib.HasSendRecv() {
		return nil, fmt.Errorf("ops: NCCL %d lacks ncclSend/ncclRecv, which the exact mode needs (NCCL 2.7 or newer)", lib.Version())
	}
	if err := g.enter(); err != nil {
		return nil, err
	}
	comm, err := lib.CommInitRank(size, driver.NCCLUniqueID(id), rank)
	g.ctx.Unlock()
	if err != nil {
		return nil, fmt.Errorf("ops: NCCL communicator of rank %d of %d on %s: %w", rank, size, d, err)
	}
	return &Comm{rank: rank, size: size, dev: d, o: o.withDefaults(),
		impl: &ncclColl{lib: lib, comm: comm, g: g}}, nil
}

// ncclColl is the NCCL implementation of a Comm.
type ncclColl struct {
	lib     *driver.NCCL
	comm    driver.Comm
	g       *cudaBackend
	mu      sync.Mutex
	aborted atomic.Bool
	err     error
}

func (n *ncclColl) failed() error {
	if !n.aborted.Load() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

func ncclOp(op ReduceOp) driver.NCCLOp {
	if op == ReduceAvg {
		return driver.NCCLAvg
	}
	return driver.NCCLSum
}

// flat returns bufs as one device vector of n elements: bufs[0] itself when it is the only one,
// else a new buffer with their contents (copyIn) or uninitialized; put copies it back.
func (n *ncclColl) flat(bufs []*Buffer, total int, copyIn bool) (*Buffer, func() error, error) {
	if len(bufs) == 1 {
		return bufs[0], func() error { return nil }, nil
	}
	f, err := newBuffer(bufs[0].dev, total)
	if err != nil {
		return nil, nil, err
	}
	off := 0
	for _, b := range bufs {
		if copyIn && b.n > 0 {
			if err := n.g.copy(f.mem.at(off), b.mem, b.n); err != nil {
				f.Release()
				return nil, nil, err
			}
		}
		off += b.n
	}
	put := func() error {
		defer f.Release()
		off := 0
		for _, b := range bufs {
			if b.n > 0 {
				if err := n.g.copy(b.mem, f.mem.at(off), b.n); err != nil {
					return err
				}
			}
			off += b.n
		}
		return nil
	}
	return f, put, nil
}

func (n *ncclColl) call(name string, f func(x *driver.Context, s driver.Stream) error) error {
	if err := n.failed(); err != nil {
		return err
	}
	return n.g.libraryCall(name, f)
}

func (n *ncclColl) allReduce(c *Comm, bufs []*Buffer, total int, op ReduceOp) error {
	f, put, err := n.flat(bufs, total, true)
	if err != nil {
		return err
	}
	if c.o.Exact {
		err = n.exactAllReduce(c, f, op)
	} else {
		p := f.mem.ptr
		err = n.call("ncclAllReduce", func(x *driver.Context, s driver.Stream) error {
			return n.lib.AllReduce(p, p, total, ncclOp(op), n.comm, s)
		})
	}
	if perr := put(); err == nil {
		err = perr
	}
	return err
}

// exactScatter returns the (R, m) matrix whose row j is rank j's elements [r*m, (r+1)*m) of x
// (zero beyond x's end), this rank being r: the all-to-all of the exact reduce-scatter, as
// grouped ncclSend/ncclRecv.
func (n *ncclColl) exactScatter(c *Comm, x *Buffer, m int) (*Buffer, error) {
	r := c.size
	padded := x
	if x.n != r*m {
		p, err := newBuffer(x.dev, r*m)
		if err != nil {
			return nil, err
		}
		defer p.Release()
		if err := n.g.copy(p.mem, x.mem, x.n); err != nil {
			return nil, err
		}
		if err := n.g.fill(p.mem.at(x.n), r*m-x.n, 0); err != nil {
			return nil, err
		}
		padded = p
	}
	stack, err := newBuffer(x.dev, r*m)
	if err != nil {
		return nil, err
	}
	src, dst := padded.mem, stack.mem
	err = n.call("exact all-to-all (ncclSend/ncclRecv)", func(x *driver.Context, s driver.Stream) error {
		if err := n.lib.GroupStart(); err != nil {
			return err
		}
		for j := 0; j < r; j++ {
			if err := n.lib.Send(src.at(j*m).ptr, m, j, n.comm, s); err != nil {
				n.lib.GroupEnd()
				return err
			}
			if err := n.lib.Recv(dst.at(j*m).ptr, m, j, n.comm, s); err != nil {
				n.lib.GroupEnd()
				return err
			}
		}
		return n.lib.GroupEnd()
	})
	if err != nil {
		stack.Release()
		return nil, err
	}
	return stack, nil
}

// exactChunk reduces this rank's chunk of x (m elements per rank) exactly.
func (n *ncclColl) exactChunk(c *Comm, x *Buffer, m int, op ReduceOp) (*Buffer, error) {
	stack, err := n.exactScatter(c, x, m)
	if err != nil {
		return nil, err
	}
	defer stack.Release()
	if op == ReduceAvg {
		return ReduceMeanByColumn(stack, c.size, m)
	}
	return ReduceSumByColumn(stack, c.size, m)
}

func (n *ncclColl) exactAllReduce(c *Comm, f *Buffer, op ReduceOp) error {
	m := (f.n + c.size - 1) / c.size
	red, err := n.exactChunk(c, f, m, op)
	if err != nil {
		return err
	}
	defer red.Release()
	out, err := newBuffer(f.dev, c.size*m)
	if err != nil {
		return err
	}
	defer out.Release()
	src, dst := red.mem.ptr, out.mem.ptr
	if err := n.call("ncclAllGather", func(x *driver.Context, s driver.Stream) error {
		return n.lib.AllGather(src, dst, m, n.comm, s)
	}); err != nil {
		return err
	}
	return n.g.copy(f.mem, out.mem, f.n)
}

func (n *ncclColl) broadcast(c *Comm, bufs []*Buffer, total int, root int) error {
	f, put, err := n.flat(bufs, total, c.rank == root)
	if err != nil {
		return err
	}
	p := f.mem.ptr
	err = n.call("ncclBroadcast", func(x *driver.Context, s driver.Stream) error {
		return n.lib.Broadcast(p, p, total, root, n.comm, s)
	})
	if perr := put(); err == nil {
		err = perr
	}
	return err
}

func (n *ncclColl) reduceScatter(c *Comm, x *Buffer, op ReduceOp) (*Buffer, error) {
	m := x.n / c.size
	if c.o.Exact {
		return n.exactChunk(c, x, m, op)
	}
	out, err := newBuffer(x.dev, m)
	if err != nil {
		return nil, err
	}
	src, dst := x.mem.ptr, out.mem.ptr
	if err := n.call("ncclReduceScatter", func(_ *driver.Context, s driver.Stream) error {
		return n.lib.ReduceScatter(src, dst, m, ncclOp(op), n.comm, s)
	}); err != nil {
		out.Release()
		return nil, err
	}
	return out, nil
}

func (n *ncclColl) allGather(c *Comm, x *Buffer) (*Buffer, error) {
	out, err := newBuffer(x.dev, c.size*x.n)
	if err != nil {
		return nil, err
	}
	src, dst, cnt := x.mem.ptr, out.mem.ptr, x.n
	if err := n.call("ncclAllGather", func(_ *driver.Context, s driver.Stream) error {
		return n.lib.AllGather(src, dst, cnt, n.comm, s)
	}); err != nil {
		out.Release()
		return nil, err
	}
	return out, nil
}

// wait synchronizes the device while polling NCCL's asynchronous error; past the timeout, or on
// an asynchronous error, it aborts the communicator and returns at most abortGrace later.
func (n *ncclColl) wait(c *Comm) error {
	if err := n.failed(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.dev.Sync() }()
	deadline := time.NewTimer(c.o.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			if err := n.lib.AsyncError(n.comm); err != nil {
				return n.abortWait(fmt.Errorf("%w: rank %d: NCCL reports %w", ErrAborted, c.rank, err), done)
			}
		case <-deadline.C:
			return n.abortWait(fmt.Errorf("%w: rank %d: collectives not complete within %v (a rank died or hangs)",
				ErrAborted, c.rank, c.o.Timeout), done)
		}
	}
}

// abortGrace is how long wait lets the stream drain after an abort before it returns anyway.
const abortGrace = 2 * time.Second

func (n *ncclColl) abortWait(err error, done chan error) error {
	n.abort(err)
	select {
	case <-done:
	case <-time.After(abortGrace):
	}
	return err
}

func (n *ncclColl) abort(err error) {
	n.mu.Lock()
	first := n.err == nil
	if first {
		n.err = err
		n.aborted.Store(true)
	}
	n.mu.Unlock()
	if first {
		n.lib.Abort(n.comm) // ncclCommAbort may be called from any thread
	}
}

func (n *ncclColl) close() error {
	if n.aborted.Load() {
		return nil // ncclCommAbort freed it
	}
	n.mu.Lock()
	n.aborted.Store(true)
	n.err = errors.New("ops: NCCL communicator closed")
	n.mu.Unlock()
	if err := n.g.enter(); err != nil {
		return err
	}
	defer n.g.ctx.Unlock()
	return n.lib.Destroy(n.comm)
}
