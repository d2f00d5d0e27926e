package autograd

import (
	"fmt"
	"math"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// BatchNorm is PyTorch's nn.BatchNorm1d/2d/3d: per-channel normalization of a batch (N, C, ...)
// over the batch and the other axes, with an affine transform and running statistics. Create one
// with Session.NewBatchNorm and apply it with Session.BatchNorm.
type BatchNorm struct {
	// Weight (gamma, ones) and Bias (beta, zeros) are trainable parameters of C elements.
	Weight, Bias *Param
	// RunningMean (zeros) and RunningVar (ones) are the running statistics: parameters of C
	// elements that do not require grad (optimizers skip them: they never get a gradient),
	// updated by every training-mode call and saved by StateDict under PyTorch's keys.
	RunningMean, RunningVar *Param
	// NumBatchesTracked counts the training-mode calls: a parameter of shape [] that does not
	// require grad (PyTorch's num_batches_tracked, an int64 there; a float32 here, exact up to
	// 2^24 batches).
	NumBatchesTracked *Param
	// Momentum (PyTorch's default 0.1) weighs the batch in the running statistics:
	// running = (1 - Momentum)*running + Momentum*batch, with the batch's unbiased variance.
	Momentum float64
	// Eps (PyTorch's default 1e-5) is added to the variance.
	Eps      float64
	channels int
}

// NewBatchNorm returns a batch norm of channels channels whose parameters are named
// name+".weight", ".bias", ".running_mean", ".running_var" and ".num_batches_tracked"
// (PyTorch's state_dict keys), with PyTorch's defaults.
func (s *Session) NewBatchNorm(name string, channels int) *BatchNorm {
	bn := &BatchNorm{Momentum: 0.1, Eps: 1e-5, channels: channels}
	// Ones made on the device, as Param's zeros: a channel count too large for the machine is
	// the allocator's error, not a failed host allocation.
	bn.Weight = s.param(name+".weight", []int{channels}, nil, false, 1)
	bn.Bias = s.Param(name+".bias", []int{channels}, nil)
	bn.RunningMean = s.Param(name+".running_mean", []int{channels}, nil)
	bn.RunningVar = s.param(name+".running_var", []int{channels}, nil, false, 1)
	bn.NumBatchesTracked = s.Param(name+".num_batches_tracked", []int{}, nil)
	bn.NumBatchesTracked.optional = true // PyTorch loads state dicts saved before it had one
	for _, p := range []*Param{bn.RunningMean, bn.RunningVar, bn.NumBatchesTracked} {
		p.SetRequiresGrad(false)
	}
	return bn
}

// BatchNorm applies bn to x of shape (N, C, ...) (C = bn's channels). In training mode
// (PyTorch's model.train()) each channel is normalized with the statistics of the batch (the
// biased variance, as BatchNormChannelFirstEps of x with N and C swapped) and the running
// statistics are updated (the batch must hold more than one value per channel); in evaluation
// mode (model.eval()) it is (x - RunningMean)/sqrt(RunningVar + Eps)*Weight + Bias per channel.
// Gradients reach x, Weight and Bias in both modes.
func (s *Session) BatchNorm(bn *BatchNorm, x Var, train bool) Var {
	const op = "batch_norm"
	vx, ok := s.arg(op, x)
	if !ok {
		return Var{}
	}
	if bn == nil || slices.ContainsFunc([]*Param{bn.Weight, bn.Bias, bn.RunningMean, bn.RunningVar, bn.NumBatchesTracked},
		func(p *Param) bool { return p == nil || p.s != s || p.buf == nil }) {
		s.failf(op, "the batch norm is nil, lacks a parameter or is from another session (create it with NewBatchNorm)")
		return Var{}
	}
	c := bn.channels
	if len(vx.shape) < 2 || vx.shape[1] != c {
		s.failf(op, "input of shape %v for %d channels (want (N, %d, ...))", vx.shape, c, c)
		return Var{}
	}
	if !(bn.Momentum >= 0 && bn.Momentum <= 1) {
		s.failf(op, "momentum %v is outside [0, 1]", bn.Momentum)
		return Var{}
	}
	if e := float32(bn.Eps); !(e >= 0 && e <= math.MaxFloat32) { // ops' rule: finite as a float32, >= 0
		s.failf(op, "eps %v (want finite as a float32 and >= 0)", bn.Eps)
		return Var{}
	}
	if len(vx.shape) > ops.MaxRank {
		s.failf(op, "input of rank %d is above ops.MaxRank (%d)", len(vx.shape), ops.MaxRank)
		return Var{}
	}
	if !s.liveArgs(op, []value{vx}) {
		return Var{}
	}
	perm := make([]int, len(vx.shape)) // (N, C, ...) <-> (C, N, ...)
	for i := range perm {
		perm[i] = i
	}
	perm[0], perm[1] = 1, 0
	xc := s.Permute(x, perm...)
	m := vx.len() / max(c, 1) // values per channel
	if train {
		if m < 2 {
			s.failf(op, "input of shape %v has %d value per channel; training needs more than 1", vx.shape, m)
			return Var{}
		}
		// The running statistics change last, once the output exists: a failure before leaves
		// them as they were.
		out := s.Permute(s.BatchNormChannelFirstEps(xc, s.Use(bn.Weight), s.Use(bn.Bias), bn.Eps), perm...)
		if s.Err() != nil {
			return Var{}
		}
		if err := bn.track(s.Value(xc), c, m); err != nil {
			s.fail(fmt.Errorf("autograd: %s: running statistics: %w", op, err))
			return Var{}
		}
		return out
	}
	// scale = Weight/sqrt(RunningVar + Eps), shift = Bias - RunningMean*scale, per channel.
	scale := s.Mul(s.Use(bn.Weight), s.Inv(s.Sqrt(s.AddScalar(s.Use(bn.RunningVar), bn.Eps))))
	shift := s.Sub(s.Use(bn.Bias), s.Mul(s.Use(bn.RunningMean), scale))
	flat := s.Reshape(xc, c, m)
	cols := []int{c, m}
	y := s.Add(s.Mul(flat, s.BroadcastAxes(scale, cols, []int{1, 0})), s.BroadcastAxes(shift, cols, []int{1, 0}))
	return s.Permute(s.Reshape(y, s.Shape(xc)...), perm...)
}

// track folds the statistics of the batch xc, c channels of m values each, into the running
// statistics and counts the batch: all three or, on an error, none. The batch's mean and
// variance are computed here again rather than taken from the normalization (whose sd holds
// sqrt(var + eps): the variance back from it would lose eps's bits).
func (bn *BatchNorm) track(xc *ops.Buffer, c, m int) error {
	sum, err := ops.ReduceSumByRow(xc, c, m)
	if err != nil {
		return err
	}
	mean, err := then(sum, func(sum *ops.Buffer) (*ops.Buffer, error) { return ops.Scale(sum, 1/float64(m)) })
	sum.Release()
	if err != nil {
		return err
	}
	defer mean.Release()
	variance, err := then(mean,
		func(mean *ops.Buffer) (*ops.Buffer, error) { return ops.BroadcastVecToCols(mean, c, m) },
		func(mc *ops.Buffer) (*ops.Buffer, error) { return ops.Sub(xc, mc) },
		func(d *ops.Buffer) (*ops.Buffer, error) { return ops.Mul(d, d) },
		func(sq *ops.Buffer) (*ops.Buffer, error) { return ops.ReduceSumByRow(sq, c, m) },
		func(ss *ops.Buffer) (*ops.Buffer, error) { return ops.Scale(ss, 1/float64(m-1)) })
	if err != nil {
		return err
	}
	defer variance.Release()
	blend := func(r, batch *ops.Buffer) (*ops.Buffer, error) { // (1 - momentum) r + momentum batch
		return then(r,
			func(r *ops.Buffer) (*ops.Buffer, error) { return ops.Scale(r, 1-bn.Momentum) },
			func(r *ops.Buffer) (*ops.Buffer, error) { return ops.Axpy(r, batch, bn.Momentum) })
	}
	nextMean, err := blend(bn.RunningMean.buf, mean)
	if err != nil {
		return err
	}
	nextVar, err := blend(bn.RunningVar.buf, variance)
	if err != nil {
		nextMean.Release()
		return err
	}
	nextCount, err := addScalar(bn.NumBatchesTracked.buf, 1)
	if err != nil {
		ops.ReleaseThen(nil, nextMean, nextVar)
		return err
	}
	for _, u := range []struct {
		p   *Param
		buf *ops.Buffer
	}{{bn.RunningMean, nextMean}, {bn.RunningVar, nextVar}, {bn.NumBatchesTracked, nextCount}} {
		u.p.replace(u.buf)
		u.p.updated()
	}
	return nil
}
