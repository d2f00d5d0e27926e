package autograd

import (
	"fmt"
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
	flat := make([]int, 0, r) // the positions of the kept rows' labels in the (r, c) log-softmax
	kept := make([]int, 0, r) // the kept rows
	for i, l := range labels {
		if o.Ignore && l == o.IgnoreIndex {
			continue
		}
		if l < 0 || l >= c {
			hint := ""
			if l < 0 && !o.Ignore {
				hint = fmt.Sprintf(" (to leave such rows out, use CrossEntropyWith with Ignore: true, IgnoreIndex: %d)", l)
			}
			return t.failf(op, "label %d at position %d is outside [0, %d)%s", l, i, c, hint)
		}
		flat = append(flat, i*c+l)
		kept = append(kept, i)
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
	ls, err := ops.LogSoftmax(vx.buf, r, c)
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
