// Package dist trains one model on several devices or machines by data parallelism, in the
// shape of PyTorch's DistributedDataParallel: every rank holds a replica of the parameters, runs
// the forward and backward pass on its own shard of each batch, and averages the gradients with
// the other ranks before an optimizer step that is then identical everywhere.
//
// A DDP wraps a rank's autograd.Session and its ops.Comm. New checks that every rank has the
// same parameters (names aside: the count, order, shapes and trainability; a mismatch is an
// error naming the parameter and the ranks) and copies rank 0's values to every rank. Each step
// then runs
//
//	sess.Reset()
//	loss := model(sess, batch) // this rank's shard of the global batch
//	ddp.Backward(loss)         // Session.Backward, then the gradients' average over the ranks
//	opt.Step()                 // the same update on every rank
//	opt.ZeroGrad()
//
// The gradients are averaged in buckets of at most Options.BucketBytes, in reverse parameter
// order (the order in which a backward pass usually completes them, PyTorch's reverse
// registration order), one all-reduce per bucket, and the all-reduces overlap the backward pass:
// Backward sets the session's gradient hook (autograd.Session.SetGradHook), and a bucket's
// all-reduce starts as soon as the gradients of all its parameters are final and every earlier
// bucket has started (the buckets start in order on every rank, as the collectives require).
// The all-reduces run in order on a goroutine of the rank (host collectives complete before
// they return; NCCL's are queued on the device's stream), while the backward pass goes on, and
// Backward waits for all of them before it returns, so the optimizer step that follows reads
// averaged gradients. On CUDA the NCCL commands go to the device's one stream, behind the
// kernels that produced their gradients and interleaved with the rest of the backward pass, so
// the GPU runs them in stream order (the host issues them early; the GPU does not run
// communication and computation at the same time until collectives get a stream of their own).
// Options.NoOverlap runs them after the backward pass instead. Either way
// the all-reduces sum the same values in the same order: only their timing differs, and the
// bits do not.
//
// A trainable parameter that has no gradient on a rank after the backward pass (the loss did
// not use it, or the step never recorded it) counts as a zero gradient: the rank gives it a
// zero gradient (autograd.Param.GradOrZeros) that its bucket all-reduces with the others', so
// every rank ends with the average over the ranks (zeros where no rank used it). This is
// PyTorch's find_unused_parameters without its per-step search, and with one difference: a
// parameter no rank used gets a zero gradient instead of none, so an optimizer with momentum or
// weight decay still moves it; freeze it (SetRequiresGrad(false) before New) to keep it fixed.
//
// Gradient accumulation: BackwardNoSync (PyTorch's no_sync()) runs a backward pass without any
// communication, so the gradients of several micro-batches accumulate locally; the next
// Backward adds its own and averages the sums.
//
// # Running
//
// RunLocal runs one rank per device of this process, each in its own goroutine: several CUDA
// devices (NCCL communicators when libnccl loads), or several in-process ranks on the CPU (the
// simulation that CPU-only CI runs). Init joins a group of processes configured as torchrun
// configures them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT): rank 0 listens on
// MASTER_PORT, the others connect to MASTER_ADDR:MASTER_PORT; on CUDA devices with libnccl the
// connection carries the NCCL unique id and NCCL does the rest, otherwise (CPU ranks) it carries
// the exact all-reduce itself, through rank 0.
//
// # Exactness
//
// With exact communicators (always on the host path; Options of RunLocal and Init on CUDA) the
// averaged gradients are the rank-ordered float32 sums of ops' exact mode, divided by the number
// of ranks, so a run is bit-identical run to run and equal to the same ranks simulated on the CPU
// (a golden hash in testdata guards it). Equal to a single-process run over the whole global
// batch it is in exact arithmetic whenever the loss is a mean over the batch and every rank gets
// the same number of examples (the average of the shards' mean gradients is the global batch's
// mean gradient); in float32 the sums are grouped differently, so the two agree to rounding, and
// bit for bit only where the sums are exact. ShardOrder gives every rank the same number of
// examples, and makes the ranks' batch k together the single-process batch k of the same order.
//
// # Faults
//
// A rank whose function returns an error (RunLocal), or whose process dies (Init: its connection
// closes), aborts the group: the other ranks' next collective fails at once with an error
// wrapping ops.ErrAborted. A rank that hangs makes the others fail when their wait passes
// Options.Timeout (ops.DefaultCollectiveTimeout, 5 minutes, by default): in a host collective,
// and on CUDA in the wait that follows each step's all-reduces (ops.Comm.Wait, which aborts the
// NCCL communicator). The rendezvous itself gives up after its timeout, and a bad MASTER_ADDR or
// MASTER_PORT is an error naming the variable and the value.
package dist

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// DefaultBucketBytes is PyTorch DDP's default bucket size, 25 MiB.
const DefaultBucketBytes = 25 << 20

// Options configure New.
type Options struct {
	// BucketBytes bounds the gradient bytes one all-reduce carries (0: DefaultBucketBytes); a
	// parameter larger than the bound gets a bucket of its own.
	BucketBytes int
	// NoWait skips the wait for the all-reduces after each step on CUDA (ops.Comm.Wait), which
	// is where a dead or hung peer is detected; the host path never needs it.
	NoWait bool
	// NoOverlap starts the all-reduces after the backward pass instead of during it (no
	// gradient hook): the same bits, for comparisons and as an escape hatch.
	NoOverlap bool
}

// DDP is one rank's data-parallel wrapper of a session. It is used by the rank's goroutine only.
type DDP struct {
	s        *autograd.Session
	c        *ops.Comm
	o        Options
	params   []*autograd.Param
	buckets  [][]int                 // indices into params, in reduction order
	bucketOf map[*autograd.Param]int // the bucket of each trainable parameter
	// onLaunch, when set (tests), is called as bucket k's all-reduce is handed to the reducer.
	onLaunch func(k int)
}

// New makes the data-parallel wrapper of s on communicator c: it checks that every rank has
// parameters of the same shapes (with the same RequiresGrad), broadcasts rank 0's values to
// every rank, and plans the gradient buckets. Every rank of c calls it at the same point. The
// parameters are those of s when New is called.
func New(s *autograd.Session, c *ops.Comm, o Options) (*DDP, error) {
	if s == nil || c == nil {
		return nil, errors.New("dist: New needs a session and a communicator")
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if o.BucketBytes <= 0 {
		o.BucketBytes = DefaultBucketBytes
	}
	d := &DDP{s: s, c: c, o: o, params: s.Params()}
	if err := d.checkShapes(); err != nil {
		c.Abort(err)
		return nil, err
	}
	if err := d.broadcast(); err != nil {
		c.Abort(err)
		return nil, err
	}
	size := 0
	var bucket []int
	for i := len(d.params) - 1; i >= 0; i-- {
		p := d.params[i]
		if !p.RequiresGrad() {
			continue
		}
		b := 4 * numel(p.Shape())
		if len(bucket) > 0 && size+b > o.BucketBytes {
			d.buckets = append(d.buckets, bucket)
			bucket, size = nil, 0
		}
		bucket, size = append(bucket, i), size+b
	}
	if len(bucket) > 0 {
		d.buckets = append(d.buckets, bucket)
	}
	d.bucketOf = map[*autograd.Param]int{}
	for k, b := range d.buckets {
		for _, i := range b {
			d.bucketOf[d.params[i]] = k
		}
	}
	return d, nil
}

func numel(shape []int) int {
	n := 1
	for _, v := range shape {
		n *= v
	}
	return n
}

// Comm returns the communicator.
func (d *DDP) Comm() *ops.Comm { return d.c }

// Buckets returns the parameters of each gradient bucket by name, in the order they are reduced.
func (d *DDP) Buckets() [][]string {
	out := make([][]string, len(d.buckets))
	for k, b := range d.buckets {
		for _, i := range b {
			out[k] = append(out[k], d.params[i].Name())
		}
	}
	return out
}

// describe is the rank's parameter list as floats: the count, then per parameter its
// RequiresGrad (0 or 1), its rank and its dimensions (exact as float32 up to 2^24; larger values
// are folded, which only weakens the check for dimensions beyond 16 million).
func (d *DDP) describe() []float32 {
	v := []float32{float32(len(d.params))}
	for _, p := range d.params {
		rg := float32(0)
		if p.RequiresGrad() {
			rg = 1
		}
		sh := p.Shape()
		v = append(v, rg, float32(len(sh)))
		for _, n := range sh {
			v = append(v, float32(n%(1<<24)))
		}
	}
	return v
}

// checkShapes compares every rank's parameter list with rank 0's (two all-gathers: the lengths,
// then the lists padded to the longest).
func (d *DDP) checkShapes() error {
	mine := d.describe()
	lens, err := d.gather([]float32{float32(len(mine))})
	if err != nil {
		return fmt.Errorf("dist: checking the parameters across ranks: %w", err)
	}
	longest := 0
	for _, l := range lens {
		longest = max(longest, int(l[0]))
	}
	padded := make([]float32, longest)
	copy(padded, mine)
	all, err := d.gather(padded)
	if err != nil {
		return fmt.Errorf("dist: checking the parameters across ranks: %w", err)
	}
	ref := all[0]
	for r, v := range all[1:] {
		if msg := compareDescriptions(ref, v, d.params); msg != "" {
			return fmt.Errorf("dist: parameters differ between rank 0 and rank %d: %s", r+1, msg)
		}
	}
	return nil
}

// compareDescriptions returns "" when a and b describe the same parameters, else what differs
// (named by this rank's parameters, which are a's or b's).
func compareDescriptions(a, b []float32, params []*autograd.Param) string {
	if a[0] != b[0] {
		return fmt.Sprintf("%d parameters against %d", int(a[0]), int(b[0]))
	}
	name := func(i int) string {
		if i < len(params) {
			return fmt.Sprintf("parameter %d (%q)", i, params[i].Name())
		}
		return fmt.Sprintf("parameter %d", i)
	}
	shape := func(v []float32, at int) ([]int, int) {
		n := int(v[at+1])
		s := make([]int, n)
		for k := range s {
			s[k] = int(v[at+2+k])
		}
		return s, at + 2 + n
	}
	ia, ib := 1, 1
	for i := range int(a[0]) {
		ga, gb := a[ia], b[ib]
		sa, na := shape(a, ia)
		sb, nb := shape(b, ib)
		if !slices.Equal(sa, sb) {
			return fmt.Sprintf("%s has shape %v on one and %v on the other", name(i), sa, sb)
		}
		if ga != gb {
			return fmt.Sprintf("%s requires grad on one rank only", name(i))
		}
		ia, ib = na, nb
	}
	return ""
}

// gather all-gathers a small host vector (of the same length on every rank) through the
// communicator.
func (d *DDP) gather(v []float32) ([][]float32, error) {
	b, err := ops.FromFloat32(d.c.Device(), v)
	if err != nil {
		return nil, err
	}
	defer b.Release()
	g, err := d.c.AllGather(b)
	if err != nil {
		return nil, err
	}
	defer g.Release()
	flat, err := g.Float32s()
	if err != nil {
		return nil, err
	}
	out := make([][]float32, d.c.Size())
	for r := range out {
		out[r] = flat[r*len(v) : (r+1)*len(v)]
	}
	return out, nil
}

// broadcast gives every rank rank 0's parameter values (through copies, set with Param.Set so
// that the parameters' host copies stay right).
func (d *DDP) broadcast() error {
	if len(d.params) == 0 {
		return nil
	}
	copies := make([]*ops.Buffer, 0, len(d.params))
	defer func() {
		for _, b := range copies {
			b.Release()
		}
	}()
	for _, p := range d.params {
		b, err := ops.Copy(p.Value())
		if err != nil {
			return fmt.Errorf("dist: broadcast of %s: %w", p.Name(), err)
		}
		copies = append(copies, b)
	}
	if err := d.c.Broadcast(0, copies...); err != nil {
		return fmt.Errorf("dist: broadcast of the parameters from rank 0: %w", err)
	}
	if d.c.Rank() == 0 {
		return nil
	}
	for i, p := range d.params {
		v, err := copies[i].Float32s()
		if err == nil {
			err = p.Set(v)
		}
		if err != nil {
			return fmt.Errorf("dist: setting %s from rank 0: %w", p.Name(), err)
		}
	}
	return nil
}

// Backward runs the session's backward pass from loss and averages the gradients over the
// ranks: each bucket's all-reduce starts as soon as its gradients are final (see the package
// comment; after the pass with Options.NoOverlap), and Backward returns once all of them have
// completed (on CUDA: waited for, unless Options.NoWait). It sets the session's gradient hook
// for the pass and removes it afterwards (a hook of the caller's is replaced). On failure the
// group is aborted.
func (d *DDP) Backward(loss autograd.Var) error {
	if d.o.NoOverlap {
		if err := d.s.Backward(loss); err != nil {
			d.c.Abort(err)
			return err
		}
		return d.AllReduceGrads()
	}
	r := d.newReducer()
	d.s.SetGradHook(r.ready)
	err := d.s.Backward(loss)
	d.s.SetGradHook(nil)
	if err == nil {
		err = r.launch(true) // none left after a pass that completed every parameter
	}
	if err != nil {
		// Before waiting for the reducer: an all-reduce that this rank's peers (or its
		// reducer) wait in and that this rank will not complete fails at once.
		d.c.Abort(err)
		r.finish()
		return err
	}
	if err := r.finish(); err != nil {
		return err // the reducer aborted the group
	}
	if err := d.wait(); err != nil {
		d.c.Abort(err)
		return err
	}
	return nil
}

// BackwardNoSync runs the session's backward pass from loss with no communication, PyTorch's
// backward inside ddp.no_sync(): the gradients accumulate on this rank, and the next Backward
// averages the sums over the ranks. Every rank must run as many of them between two Backward
// calls (as with PyTorch, nothing checks it). On failure the group is aborted.
func (d *DDP) BackwardNoSync(loss autograd.Var) error {
	d.s.SetGradHook(nil)
	if err := d.s.Backward(loss); err != nil {
		d.c.Abort(err)
		return err
	}
	return nil
}

// AllReduceGrads replaces every trainable parameter's gradient by its average over the ranks,
// bucket by bucket, and on CUDA waits for the all-reduces (unless Options.NoWait): what Backward
// does after the session's backward pass with Options.NoOverlap. A parameter without a gradient
// gets zeros first (see the package comment). On failure the group is aborted.
func (d *DDP) AllReduceGrads() error {
	err := d.allReduce()
	if err != nil {
		d.c.Abort(err)
	}
	return err
}

func (d *DDP) allReduce() error {
	for k := range d.buckets {
		grads, err := d.bucketGrads(k)
		if err == nil {
			err = d.reduceBucket(grads)
		}
		if err != nil {
			return err
		}
	}
	return d.wait()
}

// bucketGrads returns the gradients of bucket k, zeros for a parameter without one.
func (d *DDP) bucketGrads(k int) ([]*ops.Buffer, error) {
	b := d.buckets[k]
	grads := make([]*ops.Buffer, len(b))
	for j, i := range b {
		g, err := d.params[i].GradOrZeros()
		if err != nil {
			return nil, fmt.Errorf("dist: rank %d: %w", d.c.Rank(), err)
		}
		grads[j] = g
	}
	return grads, nil
}

// reduceBucket averages one bucket's gradients over the ranks, in place.
func (d *DDP) reduceBucket(grads []*ops.Buffer) error {
	if err := d.c.AllReduce(ops.ReduceAvg, grads...); err != nil {
		return fmt.Errorf("dist: rank %d: gradient all-reduce: %w", d.c.Rank(), err)
	}
	return nil
}

// wait waits for the queued all-reduces on CUDA (unless Options.NoWait).
func (d *DDP) wait() error {
	if d.o.NoWait || d.c.Device().Kind() != ops.KindCUDA {
		return nil
	}
	if err := d.c.Wait(); err != nil {
		return fmt.Errorf("dist: rank %d: %w", d.c.Rank(), err)
	}
	return nil
}

// reducer runs one backward pass's bucket all-reduces on its own goroutine, in bucket order,
// each as soon as the gradient hook has reported all of the bucket's parameters.
type reducer struct {
	d       *DDP
	pending []int // per bucket: the parameters not yet reported
	next    int   // the next bucket to hand over
	jobs    chan []*ops.Buffer
	done    chan struct{}

	mu  sync.Mutex
	err error // the first all-reduce error
}

func (d *DDP) newReducer() *reducer {
	r := &reducer{d: d, pending: make([]int, len(d.buckets)), jobs: make(chan []*ops.Buffer, len(d.buckets)),
		done: make(chan struct{})}
	for k, b := range d.buckets {
		r.pending[k] = len(b)
	}
	go func() {
		defer close(r.done)
		for grads := range r.jobs {
			if r.failed() != nil {
				continue // the group is aborted: drain
			}
			if err := d.reduceBucket(grads); err != nil {
				r.mu.Lock()
				r.err = err
				r.mu.Unlock()
				d.c.Abort(err)
			}
		}
	}()
	return r
}

func (r *reducer) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// ready is the session's gradient hook: p's gradient is final.
func (r *reducer) ready(p *autograd.Param) error {
	if err := r.failed(); err != nil {
		return err // stop the backward pass: the group is aborted
	}
	k, ok := r.d.bucketOf[p]
	if !ok { // frozen when New planned the buckets, or created after
		return nil
	}
	if r.pending[k]--; r.pending[k] == 0 {
		return r.launch(false)
	}
	return nil
}

// launch hands over, in order, the buckets whose parameters have all been reported; with all
// (after the pass), every bucket left, which a pass that reported every parameter leaves none of.
func (r *reducer) launch(all bool) error {
	for r.next < len(r.d.buckets) && (all || r.pending[r.next] == 0) {
		grads, err := r.d.bucketGrads(r.next)
		if err != nil {
			return err
		}
		if r.d.onLaunch != nil {
			r.d.onLaunch(r.next)
		}
		r.jobs <- grads
		r.next++
	}
	return nil
}

// finish waits for the handed-over all-reduces and returns the first error.
func (r *reducer) finish() error {
	close(r.jobs)
	<-r.done
	return r.failed()
}

// timeoutOr returns t, or ops.DefaultCollectiveTimeout when t <= 0.
func timeoutOr(t time.Duration) time.Duration {
	if t <= 0 {
		return ops.DefaultCollectiveTimeout
	}
	return t
}
