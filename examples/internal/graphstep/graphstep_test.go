package graphstep

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// regression is a linear model of 2 features trained with SGD on rows (x0, x1, y).
type regression struct {
	s     *autograd.Session
	lin   *nn.Linear
	opt   *autograd.SGD
	sched nn.Scheduler
}

func newRegression(t *testing.T) *regression {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 4})
	lin := nn.NewLinear(s, 2, 1, true)
	opt := autograd.NewSGD(nn.Parameters(lin), autograd.SGDOptions{LR: 0.05, Momentum: 0.9})
	sched, err := nn.NewLinearLR(opt, 1, 0.1, 6)
	if err != nil {
		t.Fatal(err)
	}
	return &regression{s: s, lin: lin, opt: opt, sched: sched}
}

// body records one step on the rows (n, 3) that rows records and returns its loss.
func (r *regression) body(rows func() autograd.Var) autograd.Var {
	s := r.s
	s.Reset()
	xy := rows()
	loss := s.MSELoss(r.lin.Forward(s.Narrow(xy, 1, 0, 2)), s.Narrow(xy, 1, 2, 1))
	s.Backward(loss)
	r.opt.Step()
	r.opt.ZeroGrad()
	return loss
}

// batches returns batches of 4, 4 and 2 rows (two batch sizes) on the CPU.
func batches(t *testing.T) []*nn.Batch {
	var out []*nn.Batch
	for k, n := range []int{4, 4, 2} {
		rows := make([]float32, 3*n)
		for i := range n {
			x0, x1 := float32(i+k)/4, float32(i*k%3)-1
			rows[3*i], rows[3*i+1], rows[3*i+2] = x0, x1, 2*x0-x1+0.5
		}
		b, err := ops.FromFloat32(ops.CPU(), rows)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &nn.Batch{Index: k, Examples: make([]int, n), X: b, XShape: []int{n, 3}})
	}
	return out
}

// train runs the batches twice with steps (RunStep) and returns the losses and the parameters'
// bits.
func (r *regression) train(t *testing.T, g *Steps) ([]float64, []float32) {
	eager := func(b *nn.Batch) float64 {
		loss := r.body(func() autograd.Var { return r.s.Const(b.X, b.XShape) })
		return float64(r.s.Item(loss))
	}
	var losses []float64
	for range 2 {
		for _, b := range batches(t) {
			l, err := RunStep(g, b, eager)
			if err != nil {
				t.Fatal(err)
			}
			b.X.Release()
			r.sched.Step()
			losses = append(losses, l)
		}
	}
	var params []float32
	for _, p := range nn.Parameters(r.lin) {
		h, err := p.Host()
		if err != nil {
			t.Fatal(err)
		}
		params = append(params, h...)
	}
	if err := r.s.Err(); err != nil {
		t.Fatal(err)
	}
	return losses, params
}

func (r *regression) close(t *testing.T) {
	r.opt.Close()
	if err := r.s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSteps: on the CPU Steps runs each batch size's step eagerly through its static input and
// gives the eager steps' losses and parameters bit for bit; Report says why no graph replayed;
// Close frees the static inputs and outputs.
func TestSteps(t *testing.T) {
	base := ops.CPU().Stats().LiveBytes
	want := newRegression(t)
	wantLoss, wantParams := want.train(t, nil)
	want.close(t)

	r := newRegression(t)
	built := 0
	g := New(r.s, "test", func(xShape []int) (Size, error) {
		built++
		in, err := r.s.NewStaticInput(xShape...)
		if err != nil {
			return Size{}, err
		}
		return Size{
			Load:    func(b *nn.Batch) error { return in.CopyFrom(b.X) },
			Body:    func() autograd.Var { return r.body(in.Var) },
			Release: func() { in.Release() },
		}, nil
	})
	if g.Report() != "" {
		t.Errorf("a report before any step: %q", g.Report())
	}
	gotLoss, gotParams := r.train(t, g)
	if len(wantLoss) != 6 || !slices.Equal(gotLoss, wantLoss) || !slices.Equal(gotParams, wantParams) {
		t.Errorf("losses %v, parameters %v; eager %v, %v", gotLoss, gotParams, wantLoss, wantParams)
	}
	if wantLoss[3] == wantLoss[0] || math.IsNaN(wantLoss[5]) {
		t.Errorf("losses %v: the training does not move", wantLoss)
	}
	if built != 2 {
		t.Errorf("%d steps built for 2 batch sizes", built)
	}
	if ok, why := g.Captured(); ok || why == nil {
		t.Errorf("captured %v (%v) on the CPU", ok, why)
	}
	if rep := g.Report(); !strings.HasPrefix(rep, "graph: the training steps ran eagerly (") || !strings.Contains(rep, "not available") {
		t.Errorf("report %q", rep)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	r.close(t)
	if got := ops.CPU().Stats().LiveBytes; got != base {
		t.Errorf("live bytes %d after the runs, %d before", got, base)
	}
}

// TestOffered: on the CPU an offered step runs its function at every Run, with graph on or
// off, and logs nothing (the device cannot capture: no refusal).
func TestOffered(t *testing.T) {
	for _, graph := range []bool{false, true} {
		r := newRegression(t)
		var in []*nn.Batch
		var logged []string
		calls := 0
		var b *nn.Batch
		o := NewOffered(r.s, func() error {
			calls++
			r.body(func() autograd.Var { return r.s.Const(b.X, b.XShape) })
			return r.s.Err()
		}, graph, func(line string) { logged = append(logged, line) })
		in = batches(t)
		for _, b = range in {
			if err := o.Run(); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		for _, b := range in {
			b.X.Release()
		}
		if calls != len(in) || len(logged) != 0 || o.Captured() {
			t.Errorf("graph %v: %d calls for %d Runs, log %q, captured %v", graph, calls, len(in), logged, o.Captured())
		}
		r.close(t)
	}
}

// TestOfferedLoss: Loss reads the loss of the last Run, with graph off (the Var) and on (the
// copy made inside the step), the same bits, also after a Reset between Runs; the loss's buffer
// is freed by Close.
func TestOfferedLoss(t *testing.T) {
	var losses [2][]uint32
	for k, graph := range []bool{false, true} {
		r := newRegression(t)
		var b *nn.Batch
		o := NewOfferedLoss(r.s, func() (autograd.Var, error) {
			loss := r.body(func() autograd.Var { return r.s.Const(b.X, b.XShape) })
			return loss, r.s.Err()
		}, graph, nil)
		in := batches(t)
		for _, b = range in {
			if err := o.Run(); err != nil {
				t.Fatal(err)
			}
			l, err := o.Loss()
			if err != nil {
				t.Fatal(err)
			}
			losses[k] = append(losses[k], math.Float32bits(l))
			if graph {
				r.s.Reset() // an evaluation between steps: the copy stays readable
				if l2, err := o.Loss(); err != nil || math.Float32bits(l2) != math.Float32bits(l) {
					t.Errorf("Loss after Reset: %v, %v; want %v", l2, err, l)
				}
			}
		}
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		for _, b := range in {
			b.X.Release()
		}
		if (o.out != nil) != graph || o.out.Release() {
			t.Errorf("graph %v: the loss's buffer %v, not released by Close", graph, o.out)
		}
		r.close(t)
	}
	if len(losses[0]) == 0 || !slices.Equal(losses[0], losses[1]) {
		t.Errorf("losses %v without graph, %v with", losses[0], losses[1])
	}
	if _, err := NewOffered(nil, nil, false, nil).Loss(); err == nil {
		t.Error("Loss of a step made by NewOffered succeeded")
	}
}
