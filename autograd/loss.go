package autograd

import (
	"fmt"
	"math"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// MSELoss returns mean((yhat - target)^2) as a scalar (shapes must agree). Both operands may
// require grad.
func (t *Tape) MSELoss(yhat, target Var) Var {
	const op = "mse_loss"
	vs, ok := t.args(op, yhat, target)
	if !ok {
		return Var{}
	}
	va, vb := vs[0], vs[1]
	if !slices.Equal(va.shape, vb.shape) {
		return t.failf(op, "shapes %v and %v differ", va.shape, vb.shape)
	}
	n := va.len()
	diff, err := ops.Sub(va.buf, vb.buf)
	var y *ops.Buffer
	if err == nil {
		y, err = then(diff, func(d *ops.Buffer) (*ops.Buffer, error) { return ops.Mul(d, d) }, ops.Mean)
	}
	return t.record(op, []int{}, y, err, []releaser{diff}, []Var{yhat, target}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		d, err := then(g,
			func(g *ops.Buffer) (*ops.Buffer, error) { return spread(g, 2/float64(n), n) },
			func(s *ops.Buffer) (*ops.Buffer, error) { return ops.Mul(s, diff) })
		if err != nil {
			return nil, err
		}
		out := []*ops.Buffer{nil, nil}
		if need[1] {
			if out[1], err = ops.Scale(d, -1); err != nil {
				d.Release()
				return nil, err
			}
		}
		if need[0] {
			out[0] = d
		} else {
			d.Release()
		}
		return out, nil
	})
}

// CrossEntropy returns the mean over rows of -log softmax(logits)[row, labels[row]]: the
// cross-entropy of the logits (rows folded from the leading axes, classes along the last one)
// against integer class labels, one per row. A label outside [0, classes) is an error. The
// log-softmax and the uploaded indices are retained for the backward pass.
func (t *Tape) CrossEntropy(logits Var, labels []int) Var {
	return t.CrossEntropyWith(logits, labels, CrossEntropyOptions{})
}

// CrossEntropyIgnore is CrossEntropy leaving out the rows whose label is ignore (PyTorch's
// ignore_index, whose default is -100: the padding positions of a batch of sequences): the mean
// runs over the other rows, and the ignored rows get a zero gradient. When every row is
// ignored the loss is NaN (as in PyTorch) and every gradient zero.
func (t *Tape) CrossEntropyIgnore(logits Var, labels []int, ignore int) Var {
	return t.CrossEntropyWith(logits, labels, CrossEntropyOptions{Ignore: true, IgnoreIndex: ignore})
}

// CrossEntropyOptions are the options of CrossEntropyWith (PyTorch's cross_entropy arguments of
// the same names). The zero value is plain CrossEntropy.
type CrossEntropyOptions struct {
	// Ignore leaves out the rows labelled IgnoreIndex, as CrossEntropyIgnore does. It must be
	// set for IgnoreIndex to count (PyTorch ignores -100 by default; here nothing is ignored
	// unless Ignore is true).
	Ignore      bool
	IgnoreIndex int // the label of the rows to leave out (PyTorch's ignore_index, e.g. -100)
	// LabelSmoothing ε in [0, 1] mixes the one-hot target with the uniform distribution over the
	// C classes: each kept row contributes -(1-ε) log p[label] - (ε/C) Σ_j log p[j].
	LabelSmoothing float64
}

// CrossEntropyWith is CrossEntropy with options: the mean over the kept rows of each row's loss
// (see CrossEntropyOptions). Without smoothing its bits are CrossEntropy's (CrossEntropyIgnore's
// with Ignore).
func (t *Tape) CrossEntropyWith(logits Var, labels []int, o CrossEntropyOptions) Var {
	const op = "cross_entropy"
	vx, ok := t.arg(op, logits)
	if !ok {
		return Var{}
	}
	eps := o.LabelSmoothing
	if !(eps >= 0 && eps <= 1) {
		return t.failf(op, "label smoothing %v is outside [0, 1]", eps)
	}
	r, c := lastAxis(vx.shape)
	if len(vx.shape) == 0 || len(labels) != r {
		return t.failf(op, "%d labels for logits of shape %v", len(labels), vx.shape)
	}
	// the positions of the kept rows' labels in the (r, c) log-softmax, and the kept rows
	flat, kept, _, ok := t.labelRows(op, labels, c, o.Ignore, o.IgnoreIndex, "use CrossEntropyWith with")
	if !ok {
		return Var{}
	}
	k := len(flat)
	work := make([]releaser, 0, 3)
	fail := func(err error) Var {
		release(work)
		return t.fail(opFailed(op, err))
	}
	ix, err := ops.NewIndices(t.dev, flat)
	if err != nil {
		return fail(err)
	}
	work = append(work, ix)
	var rows *ops.Indices // the kept rows, for smoothing
	if eps > 0 {
		if rows, err = ops.NewIndices(t.dev, kept); err != nil {
			return fail(err)
		}
		work = append(work, rows)
	}
	return t.crossEntropyAt(op, logits, vx.buf, r, c, ix, rows, k, eps, work)
}

// CrossEntropyIdx is CrossEntropy with the labels prepared on the device, as a captured step
// needs (see capture.go; refill them between steps with ops.Indices.Update): pos holds, for
// every row that counts, row*classes + label, its position in the (rows, classes) logits
// (LabelPositions computes them, leaving out ignored rows). The loss is the mean over those
// pos.Len() rows of -log softmax(logits)[pos], with the bits of CrossEntropy (CrossEntropyIgnore
// when rows are left out) over the same labels. pos is borrowed: it must stay live until the
// tape is Reset. Its values are on the device and not checked: a position beyond the logits
// reads 0 and passes no gradient (the gather's totalization).
func (t *Tape) CrossEntropyIdx(logits Var, pos *ops.Indices) Var {
	const op = "cross_entropy"
	vx, ok := t.arg(op, logits)
	switch {
	case !ok:
		return Var{}
	case pos == nil:
		return t.failf(op, "nil label positions")
	case len(vx.shape) == 0:
		return t.failf(op, "logits of shape %v", vx.shape)
	}
	r, c := lastAxis(vx.shape)
	if pos.Len() > r {
		return t.failf(op, "%d label positions for logits of shape %v", pos.Len(), vx.shape)
	}
	return t.crossEntropyAt(op, logits, vx.buf, r, c, pos, nil, pos.Len(), 0, nil)
}

// LabelPositions returns the positions of labels (one per row of (len(labels), classes) logits)
// that CrossEntropyIdx takes: row*classes + label for every row, or, with ignore, every row
// whose label is not ignoreIndex. A label outside [0, classes) is an error.
func LabelPositions(labels []int, classes int, ignore bool, ignoreIndex int) ([]int, error) {
	pos := make([]int, 0, len(labels))
	for i, l := range labels {
		if ignore && l == ignoreIndex {
			continue
		}
		if l < 0 || l >= classes {
			return nil, fmt.Errorf("autograd: label positions: label %d at position %d is outside [0, %d)", l, i, classes)
		}
		pos = append(pos, i*classes+l)
	}
	return pos, nil
}

// crossEntropyAt records the cross-entropy of the (r, c) logits (x their buffer) at the k label
// positions ix, smoothed by eps over the kept rows rows (nil without smoothing); work holds
// what the tape owns.
func (t *Tape) crossEntropyAt(op string, logits Var, x *ops.Buffer, r, c int, ix, rows *ops.Indices, k int, eps float64, work []releaser) Var {
	ls, err := ops.LogSoftmax(x, r, c)
	var y *ops.Buffer
	if err == nil {
		y, err = then(ls,
			func(ls *ops.Buffer) (*ops.Buffer, error) { return ops.GatherRowsIdx(ls, r*c, 1, ix) },
			ops.Mean,
			func(m *ops.Buffer) (*ops.Buffer, error) { return ops.Scale(m, -(1 - eps)) })
	}
	if err == nil && eps > 0 {
		// + (-ε/(C k)) Σ over the kept rows of their log-probabilities
		var sum *ops.Buffer
		sum, err = then(ls,
			func(ls *ops.Buffer) (*ops.Buffer, error) { return ops.GatherRowsIdx(ls, r, c, rows) },
			ops.Sum)
		if err == nil {
			nll := y
			y, err = ops.Axpy(nll, sum, -eps/float64(c*max(k, 1)))
			nll.Release()
			sum.Release()
		}
	}
	work = append(work, ls)
	return t.record(op, []int{}, y, err, work, []Var{logits}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) {
			d, err := then(g,
				func(g *ops.Buffer) (*ops.Buffer, error) { return spread(g, -(1-eps)/float64(max(k, 1)), k) },
				func(s *ops.Buffer) (*ops.Buffer, error) { return scatterZeros(s, r*c, 1, ix) })
			if err == nil && eps > 0 {
				var smooth *ops.Buffer
				smooth, err = then(g,
					func(g *ops.Buffer) (*ops.Buffer, error) { return spread(g, -eps/float64(c*max(k, 1)), k*c) },
					func(s *ops.Buffer) (*ops.Buffer, error) { return scatterZeros(s, r, c, rows) })
				if err == nil {
					one := d
					d, err = ops.Add(one, smooth)
					one.Release()
					smooth.Release()
				} else {
					d.Release()
				}
			}
			if err != nil {
				return nil, err
			}
			defer d.Release()
			return ops.LogSoftmaxBwd(ls, d, r, c)
		})
	})
}

// scatterZeros returns the (rows, cols) matrix of zeros with row j of values added to row ix[j].
func scatterZeros(values *ops.Buffer, rows, cols int, ix *ops.Indices) (*ops.Buffer, error) {
	z, err := ops.Zeros(values.Device(), rows*cols)
	if err != nil {
		return nil, err
	}
	defer z.Release()
	return ops.ScatterAddRowsIdx(z, values, rows, cols, ix)
}

// labelRows checks labels, one per row of an (r, c) matrix (r = len(labels)), against [0, c),
// leaving out those equal to ignoreIndex when ignore is set, and returns for the kept rows the
// positions of their labels in the matrix (i*c + label), the rows and the labels. A label out of
// range records op's error; a negative one not ignored gets a hint naming how (how: "use
// CrossEntropyWith with", say).
func (t *Tape) labelRows(op string, labels []int, c int, ignore bool, ignoreIndex int, how string) (flat, rows, kept []int, ok bool) {
	flat, rows, kept = make([]int, 0, len(labels)), make([]int, 0, len(labels)), make([]int, 0, len(labels))
	for i, l := range labels {
		if ignore && l == ignoreIndex {
			continue
		}
		if l < 0 || l >= c {
			hint := ""
			if l < 0 && !ignore {
				hint = fmt.Sprintf(" (to leave such rows out, %s Ignore: true, IgnoreIndex: %d)", how, l)
			}
			t.failf(op, "label %d at position %d is outside [0, %d)%s", l, i, c, hint)
			return nil, nil, nil, false
		}
		flat, rows, kept = append(flat, i*c+l), append(rows, i), append(kept, l)
	}
	return flat, rows, kept, true
}

// Reduction is how a loss reduces its elementwise values to its result: PyTorch's reduction
// argument. The zero value is ReductionMean, PyTorch's default.
type Reduction int

const (
	ReductionMean      Reduction = iota // the mean of the elements ('mean')
	ReductionSum                        // their sum ('sum')
	ReductionNone                       // no reduction: the elementwise losses ('none')
	ReductionBatchMean                  // KLDiv only: the sum divided by the size of dim 0 ('batchmean')
)

// String returns PyTorch's name of the reduction.
func (r Reduction) String() string {
	switch r {
	case ReductionMean:
		return "mean"
	case ReductionSum:
		return "sum"
	case ReductionNone:
		return "none"
	case ReductionBatchMean:
		return "batchmean"
	}
	return fmt.Sprintf("Reduction(%d)", int(r))
}

// reductionOK reports whether op takes r (only KLDiv takes ReductionBatchMean), recording the
// error when it does not.
func (t *Tape) reductionOK(op string, r Reduction, batchMean bool) bool {
	if r == ReductionMean || r == ReductionSum || r == ReductionNone || (batchMean && r == ReductionBatchMean) {
		return true
	}
	t.failf(op, "reduction %v is not one of mean, sum, none%s", r, map[bool]string{true: ", batchmean"}[batchMean])
	return false
}

// reduce applies r to the elementwise losses l (batch: the size of dim 0, for batchmean). The
// mean of no elements is NaN, as in PyTorch.
func (t *Tape) reduce(l Var, r Reduction, batch int) Var {
	switch r {
	case ReductionSum:
		return t.Sum(l)
	case ReductionNone:
		return l
	case ReductionBatchMean:
		return t.Scale(t.Sum(l), 1/float64(batch))
	}
	return t.Mean(l)
}

// pairArgs checks the operands of an elementwise loss: valid handles of one shape (PyTorch's
// losses warn of or refuse broadcasting here). It returns the shape.
func (t *Tape) pairArgs(op string, x, y Var) ([]int, bool) {
	vs, ok := t.args(op, x, y)
	if !ok {
		return nil, false
	}
	if !slices.Equal(vs[0].shape, vs[1].shape) {
		t.failf(op, "shapes %v and %v differ", vs[0].shape, vs[1].shape)
		return nil, false
	}
	return vs[0].shape, t.liveArgs(op, vs)
}

// broadcastsTo checks that the optional operand w (the zero Var: absent) broadcasts to shape,
// naming it what in op's error.
func (t *Tape) broadcastsTo(op, what string, w Var, shape []int) bool {
	if w == (Var{}) {
		return true
	}
	vw, ok := t.arg(op, w)
	if !ok {
		return false
	}
	if b, ok := broadcastShapes(vw.shape, shape); !ok || !slices.Equal(b, shape) {
		t.failf(op, "%s of shape %v does not broadcast to the input's shape %v", what, vw.shape, shape)
		return false
	}
	return true
}

// BCEWithLogitsOptions are the options of BCEWithLogits (PyTorch's BCEWithLogitsLoss arguments
// of the same names). The zero value is PyTorch's default: the mean, no weights.
type BCEWithLogitsOptions struct {
	Reduction Reduction
	// Weight, when not the zero Var, multiplies each element's loss; its shape broadcasts to the
	// input's (e.g. one weight per class along the last axis).
	Weight Var
	// PosWeight, when not the zero Var, weighs the positive term: pos_weight p makes the loss
	// -(p*y*log σ(x) + (1-y)*log(1-σ(x))); its shape broadcasts to the input's (typically one
	// per class, the last axis).
	PosWeight Var
}

// BCEWithLogits returns the binary cross-entropy of the logits x against the targets y (of x's
// shape, in [0, 1]): PyTorch's binary_cross_entropy_with_logits, per element
//
//	softplus(x) - x*y                          (PosWeight absent)
//	(1 - y)*x + (1 + (p - 1)*y)*softplus(-x)   (PosWeight p)
//
// times Weight when given, then reduced. softplus(x) = log(1 + e^x) computed stably (Softplus),
// which is PyTorch's max(x, 0) - x*y + log(1 + e^-|x|) rearranged: no overflow for any finite
// logit. Every operand may require grad (the gradient with respect to x is σ(x) - y without
// weights). It is recorded as the elementwise ops above.
func (t *Tape) BCEWithLogits(x, y Var, o BCEWithLogitsOptions) Var {
	const op = "bce_with_logits"
	shape, ok := t.pairArgs(op, x, y)
	if !ok || !t.reductionOK(op, o.Reduction, false) ||
		!t.broadcastsTo(op, "weight", o.Weight, shape) || !t.broadcastsTo(op, "pos_weight", o.PosWeight, shape) {
		return Var{}
	}
	var l Var
	if o.PosWeight == (Var{}) {
		l = t.Sub(t.Softplus(x), t.Mul(x, y))
	} else {
		lw := t.AddScalar(t.Mul(t.AddScalar(o.PosWeight, -1), y), 1)
		l = t.Add(t.Mul(t.AddScalar(t.Scale(y, -1), 1), x), t.Mul(lw, t.Softplus(t.Scale(x, -1))))
	}
	if o.Weight != (Var{}) {
		l = t.Mul(l, o.Weight)
	}
	return t.reduce(l, o.Reduction, 0)
}

// NLLOptions are the options of NLLLoss (PyTorch's nll_loss arguments of the same names). The
// zero value is PyTorch's default except that nothing is ignored unless Ignore is set (as for
// CrossEntropyOptions).
type NLLOptions struct {
	Reduction Reduction
	// Ignore leaves out the rows labelled IgnoreIndex (PyTorch's ignore_index, e.g. -100): they
	// count in no sum or mean, get a zero gradient and, with ReductionNone, a zero loss.
	Ignore      bool
	IgnoreIndex int
	// Weight, when not the zero Var, is a weight per class (shape (C)): row i's loss is
	// -Weight[label_i] * logProbs[i, label_i], and the mean divides by the sum of the kept rows'
	// weights instead of their number (PyTorch's weighted mean).
	Weight Var
}

// NLLLoss returns the negative log-likelihood of integer class labels, one per row, under the
// log-probabilities logProbs (rows folded from the leading axes, classes along the last one, as
// CrossEntropy: for (N, C) this is PyTorch's nll_loss; PyTorch's (N, C, d1, ...) layout puts the
// classes on dim 1 instead, so move them last first). Each kept row contributes
// -logProbs[i, labels[i]]; the mean runs over the kept rows (NaN when there are none, as in
// PyTorch), and ReductionNone returns one loss per row (shape: the leading axes). A label
// outside [0, C) that is not ignored is an error. NLLLoss(LogSoftmax(x)) is CrossEntropy(x) up
// to rounding.
func (t *Tape) NLLLoss(logProbs Var, labels []int, o NLLOptions) Var {
	const op = "nll_loss"
	vx, ok := t.arg(op, logProbs)
	if !ok || !t.reductionOK(op, o.Reduction, false) {
		return Var{}
	}
	r, c := lastAxis(vx.shape)
	if len(vx.shape) == 0 || len(labels) != r {
		return t.failf(op, "%d labels for log-probabilities of shape %v", len(labels), vx.shape)
	}
	if o.Weight != (Var{}) {
		vw, ok := t.arg(op, o.Weight)
		if !ok {
			return Var{}
		}
		if !slices.Equal(vw.shape, []int{c}) {
			return t.failf(op, "weight of shape %v for %d classes (want [%d])", vw.shape, c, c)
		}
	}
	flat, rows, kept, ok := t.labelRows(op, labels, c, o.Ignore, o.IgnoreIndex, "set NLLOptions'")
	if !ok {
		return Var{}
	}
	picked := t.Gather(t.Reshape(logProbs, r*c), flat) // (k): logProbs[i, labels[i]] of the kept rows
	var w Var                                          // (k): their weights
	if o.Weight != (Var{}) {
		w = t.Gather(o.Weight, kept)
		picked = t.Mul(picked, w)
	}
	switch o.Reduction {
	case ReductionSum:
		return t.Scale(t.Sum(picked), -1)
	case ReductionNone:
		l := t.Scale(picked, -1)
		if len(rows) < r {
			l = t.ScatterAdd(t.constant(op, make([]float32, r), r), l, rows)
		}
		return t.Reshape(l, vx.shape[:len(vx.shape)-1]...)
	}
	if o.Weight != (Var{}) {
		return t.Scale(t.Div(t.Sum(picked), t.Sum(w)), -1)
	}
	return t.Scale(t.Mean(picked), -1)
}

// L1Loss returns the absolute error |x - y| (x and y of one shape), reduced by r: PyTorch's
// l1_loss. The gradient at x == y is 0 (PyTorch's sign(0)).
func (t *Tape) L1Loss(x, y Var, r Reduction) Var {
	const op = "l1_loss"
	if _, ok := t.pairArgs(op, x, y); !ok || !t.reductionOK(op, r, false) {
		return Var{}
	}
	return t.reduce(t.Abs(t.Sub(x, y)), r, 0)
}

// SmoothL1Loss returns PyTorch's smooth_l1_loss with threshold beta >= 0 (PyTorch's default is
// 1): per element, with d = |x - y|, 0.5*d²/beta where d < beta and d - 0.5*beta elsewhere,
// reduced by r; beta = 0 is L1Loss. It is computed as 0.5*m²/beta + (d - m) with m = min(d, beta)
// (Clamp), the same function. The gradient is (x - y)/beta inside, ±1 outside, and at the kink
// d = beta it is ±1, PyTorch's value there ((x - y)/beta); at x == y it is 0 (also for beta = 0,
// where PyTorch 1.13 gives -1 to both operands).
func (t *Tape) SmoothL1Loss(x, y Var, beta float64, r Reduction) Var {
	const op = "smooth_l1_loss"
	if _, ok := t.pairArgs(op, x, y); !ok || !t.reductionOK(op, r, false) {
		return Var{}
	}
	if !(beta >= 0) || math.IsInf(beta, 1) {
		return t.failf(op, "beta %v is not a finite number >= 0", beta)
	}
	if beta == 0 {
		return t.L1Loss(x, y, r)
	}
	d := t.Abs(t.Sub(x, y))
	m := t.Clamp(d, 0, beta)
	return t.reduce(t.Add(t.Scale(t.Mul(m, m), 0.5/beta), t.Sub(d, m)), r, 0)
}

// HuberLoss returns PyTorch's huber_loss with threshold delta > 0 (PyTorch's default is 1): per
// element, with d = |x - y|, 0.5*d² where d < delta and delta*(d - 0.5*delta) elsewhere, reduced
// by r (delta * SmoothL1Loss with beta = delta). It is computed as 0.5*m² + delta*(d - m) with
// m = min(d, delta). The gradient is x - y inside, ±delta outside and at the kink (PyTorch's
// value there); 0 at x == y.
func (t *Tape) HuberLoss(x, y Var, delta float64, r Reduction) Var {
	const op = "huber_loss"
	if _, ok := t.pairArgs(op, x, y); !ok || !t.reductionOK(op, r, false) {
		return Var{}
	}
	if !(delta > 0) || math.IsInf(delta, 1) {
		return t.failf(op, "delta %v is not a finite number > 0", delta)
	}
	d := t.Abs(t.Sub(x, y))
	m := t.Clamp(d, 0, delta)
	return t.reduce(t.Add(t.Scale(t.Mul(m, m), 0.5), t.Scale(t.Sub(d, m), delta)), r, 0)
}

// KLDivOptions are the options of KLDiv (PyTorch's kl_div arguments of the same names). The
// zero value is PyTorch's default reduction, the mean over all elements; ReductionBatchMean (the
// sum divided by the batch size) is the one that gives the KL divergence of each row's
// distributions, averaged over the batch.
type KLDivOptions struct {
	Reduction Reduction
	LogTarget bool // the target holds log-probabilities instead of probabilities
}

// KLDiv returns the Kullback-Leibler divergence loss of the log-probabilities input against
// target (of input's shape): PyTorch's kl_div, per element
//
//	target*(log(target) - input)      (probabilities; 0 where target is 0, PyTorch's xlogy)
//	exp(target)*(target - input)      (LogTarget)
//
// then reduced (batchmean divides the sum by the size of dim 0; a scalar input is not divided).
// The gradient with respect to input is -target (-exp(target)). The 0 log 0 = 0 rule is computed
// as target*log(max(target, m)) with m the smallest float32 above 0, the same value for every
// target >= 0; a target of 0 then gets the finite gradient log(m) - input (about -103.28 - input),
// where PyTorch gives -inf. Targets must be >= 0 (PyTorch gives NaN for negative ones, this
// function a finite number).
func (t *Tape) KLDiv(input, target Var, o KLDivOptions) Var {
	const op = "kl_div"
	shape, ok := t.pairArgs(op, input, target)
	if !ok || !t.reductionOK(op, o.Reduction, true) {
		return Var{}
	}
	var l Var
	if o.LogTarget {
		l = t.Mul(t.Exp(target), t.Sub(target, input))
	} else {
		l = t.Sub(t.Mul(target, t.Log(t.Clamp(target, math.SmallestNonzeroFloat32, math.Inf(1)))), t.Mul(target, input))
	}
	batch := 1
	if len(shape) > 0 {
		batch = shape[0]
	}
	return t.reduce(l, o.Reduction, batch)
}
