package autograd_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// torchReference is testdata/torch_reference.json, written by testdata/torch_reference.py with
// PyTorch 1.13 (CPU, float32): losses with their gradients, and RMSprop steps.
type torchReference struct {
	Torch  string `json:"torch"`
	Losses []struct {
		Name      string    `json:"name"`
		Shape     []int     `json:"shape"`
		X         []float64 `json:"x"`
		Y         []float64 `json:"y"`
		Out       []float64 `json:"out"`
		OutShape  []int     `json:"out_shape"`
		GradX     []float64 `json:"grad_x"`
		GradY     []float64 `json:"grad_y"` // nil: not compared (the target needs no gradient)
		Weight    []float64 `json:"weight"`
		PosWeight []float64 `json:"pos_weight"`
		Reduction string    `json:"reduction"`
		Beta      float64   `json:"beta"`
		Delta     float64   `json:"delta"`
		LogTarget bool      `json:"log_target"`
	} `json:"losses"`
	NLL []struct {
		Shape     []int     `json:"shape"`
		X         []float64 `json:"x"`
		Labels    []int     `json:"labels"`
		Ignore    *int      `json:"ignore"`
		Weight    []float64 `json:"weight"`
		Reduction string    `json:"reduction"`
		Out       []float64 `json:"out"`
		OutShape  []int     `json:"out_shape"`
		GradX     []float64 `json:"grad_x"`
	} `json:"nll"`
	RMSprop []struct {
		Opts struct {
			LR          *float64 `json:"lr"`
			Alpha       *float64 `json:"alpha"`
			Eps         *float64 `json:"eps"`
			WeightDecay float64  `json:"weight_decay"`
			Momentum    float64  `json:"momentum"`
			Centered    bool     `json:"centered"`
		} `json:"opts"`
		P0             []float64   `json:"p0"`
		Grads          [][]float64 `json:"grads"`
		Params         [][]float64 `json:"params"`
		SquareAvg      []float64   `json:"square_avg"`
		MomentumBuffer []float64   `json:"momentum_buffer"`
		GradAvg        []float64   `json:"grad_avg"`
		Step           float64     `json:"step"`
	} `json:"rmsprop"`
}

func loadTorchReference(t *testing.T) *torchReference {
	t.Helper()
	b, err := os.ReadFile("testdata/torch_reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref torchReference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Losses) == 0 || len(ref.NLL) == 0 || len(ref.RMSprop) == 0 {
		t.Fatalf("torch_reference.json holds %d losses, %d NLL cases, %d RMSprop runs", len(ref.Losses), len(ref.NLL), len(ref.RMSprop))
	}
	return &ref
}

var reductions = map[string]autograd.Reduction{
	"mean": autograd.ReductionMean, "sum": autograd.ReductionSum, "none": autograd.ReductionNone,
	"batchmean": autograd.ReductionBatchMean,
}

// closeTo compares got with PyTorch's float32 result want: within a few float32 roundings of
// the values involved.
func closeTo(got, want []float64, tol float64) int {
	if len(got) != len(want) {
		return 0
	}
	for i := range got {
		if !(math.Abs(got[i]-want[i]) <= tol*(1+math.Abs(want[i]))) {
			return i
		}
	}
	return -1
}

// TestLossesAgainstPyTorch compares the values and the gradients of every loss with PyTorch's
// on the same float32 inputs, including the kinks (|x - y| exactly beta or delta), a difference
// of 0, a zero KL target and logits of ±100.
func TestLossesAgainstPyTorch(t *testing.T) {
	ref := loadTorchReference(t)
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range ref.Losses {
			t.Run(c.Name, func(t *testing.T) {
				tp := autograd.NewTape(d)
				defer tp.Reset()
				leaf := func(v []float64, shape []int, grad bool) autograd.Var {
					b := upload(t, d, v...)
					t.Cleanup(func() { b.Release() })
					return tp.Leaf(b, shape, grad)
				}
				x, y := leaf(c.X, c.Shape, true), leaf(c.Y, c.Shape, c.GradY != nil)
				r := reductions[c.Reduction]
				var l autograd.Var
				switch kind := c.Name[:strings.Index(c.Name, "/")]; kind {
				case "bce_with_logits":
					o := autograd.BCEWithLogitsOptions{Reduction: r}
					if c.Weight != nil {
						o.Weight = leaf(c.Weight, []int{len(c.Weight)}, false)
					}
					if c.PosWeight != nil {
						o.PosWeight = leaf(c.PosWeight, []int{len(c.PosWeight)}, false)
					}
					l = tp.BCEWithLogits(x, y, o)
				case "l1_loss":
					l = tp.L1Loss(x, y, r)
				case "smooth_l1_loss":
					l = tp.SmoothL1Loss(x, y, c.Beta, r)
				case "huber_loss":
					l = tp.HuberLoss(x, y, c.Delta, r)
				case "kl_div":
					l = tp.KLDiv(x, y, autograd.KLDivOptions{Reduction: r, LogTarget: c.LogTarget})
				default:
					t.Fatalf("unknown loss %s", kind)
				}
				if err := tp.Err(); err != nil {
					t.Fatal(err)
				}
				if got := tp.Shape(l); numel(got) != numel(c.OutShape) || len(got) != len(c.OutShape) {
					t.Errorf("shape %v, PyTorch's %v", got, c.OutShape)
				}
				if got := values(t, tp.Value(l)); closeTo(got, c.Out, 2e-6) >= 0 {
					t.Errorf("loss %v, PyTorch's %v", got, c.Out)
				}
				if err := tp.Backward(tp.Sum(l)); err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(c.Name, "smooth_l1_loss/beta=0/") {
					// At x == y (element 0) PyTorch 1.13's smooth_l1_loss with beta = 0 gives -1 to
					// both operands, which is no gradient of |x - y|; here it is L1Loss's 0.
					c.GradX, c.GradY = append([]float64{0}, c.GradX[1:]...), append([]float64{0}, c.GradY[1:]...)
				}
				if got := values(t, tp.Grad(x)); closeTo(got, c.GradX, 2e-6) >= 0 {
					t.Errorf("input gradient %v, PyTorch's %v", got, c.GradX)
				}
				if c.GradY != nil {
					if got := values(t, tp.Grad(y)); closeTo(got, c.GradY, 2e-6) >= 0 {
						t.Errorf("target gradient %v, PyTorch's %v", got, c.GradY)
					}
				}
			})
		}
		for _, c := range ref.NLL {
			tp := autograd.NewTape(d)
			xb := upload(t, d, c.X...)
			x := tp.Leaf(xb, c.Shape, true)
			o := autograd.NLLOptions{Reduction: reductions[c.Reduction]}
			if c.Ignore != nil {
				o.Ignore, o.IgnoreIndex = true, *c.Ignore
			}
			var wb *ops.Buffer
			if c.Weight != nil {
				wb = upload(t, d, c.Weight...)
				o.Weight = tp.Const(wb, []int{len(c.Weight)})
			}
			l := tp.NLLLoss(x, c.Labels, o)
			if err := tp.Backward(tp.Sum(l)); err != nil {
				t.Fatalf("nll %v %+v: %v", c.Labels, o, err)
			}
			got, grad := values(t, tp.Value(l)), values(t, tp.Grad(x))
			if closeTo(got, c.Out, 2e-6) >= 0 || closeTo(grad, c.GradX, 2e-6) >= 0 || len(tp.Shape(l)) != len(c.OutShape) {
				t.Errorf("nll %v %+v: loss %v (shape %v), gradient %v; PyTorch's %v (shape %v), %v",
					c.Labels, o, got, tp.Shape(l), grad, c.Out, c.OutShape, c.GradX)
			}
			tp.Reset()
			xb.Release()
			if wb != nil {
				wb.Release()
			}
		}
	})
}

// TestLossGradients checks the losses' gradients with respect to every operand against central
// differences of float64 references (checkGrad), away from the kinks, with every reduction.
func TestLossGradients(t *testing.T) {
	unit := func(r *rand.Rand) float64 { return 0.05 + 0.9*r.Float64() }
	sh := []int{4, 3}
	elementwise := func(name string, f func(x, y float64) float64, gen []func(*rand.Rand) float64,
		op func(tp *autograd.Tape, x, y autograd.Var, r autograd.Reduction) autograd.Var) []gradCase {
		var cs []gradCase
		for _, r := range []autograd.Reduction{autograd.ReductionMean, autograd.ReductionSum, autograd.ReductionNone} {
			cs = append(cs, gradCase{name: name + "/" + r.String(), in: [][]int{sh, sh}, gen: gen,
				op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return op(tp, x[0], x[1], r) },
				ref: func(x [][]float64) []float64 {
					l := mapIdx(len(x[0]), func(i int) float64 { return f(x[0][i], x[1][i]) })
					return reduceRef(l, r, sh[0])
				}})
		}
		return cs
	}
	var cases []gradCase
	cases = append(cases, elementwise("bce_with_logits", func(x, y float64) float64 { return softplus(x) - x*y },
		[]func(*rand.Rand) float64{normal, unit},
		func(tp *autograd.Tape, x, y autograd.Var, r autograd.Reduction) autograd.Var {
			return tp.BCEWithLogits(x, y, autograd.BCEWithLogitsOptions{Reduction: r})
		})...)
	cases = append(cases, elementwise("l1_loss", func(x, y float64) float64 { return math.Abs(x - y) }, nil,
		(*autograd.Tape).L1Loss)...)
	smooth := func(d, beta float64) float64 {
		if d = math.Abs(d); d < beta {
			return 0.5 * d * d / beta
		}
		return d - 0.5*beta
	}
	cases = append(cases, elementwise("smooth_l1_loss", func(x, y float64) float64 { return smooth(x-y, 0.7) }, nil,
		func(tp *autograd.Tape, x, y autograd.Var, r autograd.Reduction) autograd.Var {
			return tp.SmoothL1Loss(x, y, 0.7, r)
		})...)
	cases = append(cases, elementwise("huber_loss", func(x, y float64) float64 { return 1.3 * smooth(x-y, 1.3) }, nil,
		func(tp *autograd.Tape, x, y autograd.Var, r autograd.Reduction) autograd.Var {
			return tp.HuberLoss(x, y, 1.3, r)
		})...)
	cases = append(cases, elementwise("kl_div", func(x, y float64) float64 { return y * (math.Log(y) - x) },
		[]func(*rand.Rand) float64{normal, unit},
		func(tp *autograd.Tape, x, y autograd.Var, r autograd.Reduction) autograd.Var {
			return tp.KLDiv(x, y, autograd.KLDivOptions{Reduction: r})
		})...)
	cases = append(cases, elementwise("kl_div_log_target", func(x, y float64) float64 { return math.Exp(y) * (y - x) }, nil,
		func(tp *autograd.Tape, x, y autograd.Var, r autograd.Reduction) autograd.Var {
			return tp.KLDiv(x, y, autograd.KLDivOptions{Reduction: r, LogTarget: true})
		})...)
	cases = append(cases, gradCase{name: "kl_div/batchmean", in: [][]int{sh, sh}, gen: []func(*rand.Rand) float64{normal, unit},
		op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
			return tp.KLDiv(x[0], x[1], autograd.KLDivOptions{Reduction: autograd.ReductionBatchMean})
		},
		ref: func(x [][]float64) []float64 {
			return []float64{sum(mapIdx(len(x[0]), func(i int) float64 { return x[1][i] * (math.Log(x[1][i]) - x[0][i]) })) / 4}
		}})
	// BCE with weights and positive weights per class, every operand differentiated.
	cases = append(cases, gradCase{name: "bce_with_logits/weights", in: [][]int{sh, sh, {3}, {3}},
		gen: []func(*rand.Rand) float64{normal, unit, positive, positive},
		op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
			return tp.BCEWithLogits(x[0], x[1], autograd.BCEWithLogitsOptions{Reduction: autograd.ReductionNone, Weight: x[2], PosWeight: x[3]})
		},
		ref: func(x [][]float64) []float64 {
			return mapIdx(12, func(i int) float64 {
				v, y, w, p := x[0][i], x[1][i], x[2][i%3], x[3][i%3]
				return w * ((1-y)*v + (1+(p-1)*y)*softplus(-v))
			})
		}})
	// NLL with an ignored row and class weights (differentiated too): the weighted mean.
	labels := []int{2, -100, 0, 3, 3}
	nllRef := func(x [][]float64, weighted bool, r autograd.Reduction) []float64 {
		var num, den float64
		per := make([]float64, len(labels))
		for i, l := range labels {
			if l < 0 {
				continue
			}
			w := 1.0
			if weighted {
				w = x[1][l]
			}
			per[i] = -w * x[0][i*4+l]
			num, den = num+per[i], den+w
		}
		switch r {
		case autograd.ReductionSum:
			return []float64{num}
		case autograd.ReductionNone:
			return per
		}
		return []float64{num / den}
	}
	for _, r := range []autograd.Reduction{autograd.ReductionMean, autograd.ReductionSum, autograd.ReductionNone} {
		cases = append(cases, gradCase{name: "nll_loss/" + r.String(), in: [][]int{{5, 4}},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
				return tp.NLLLoss(x[0], labels, autograd.NLLOptions{Reduction: r, Ignore: true, IgnoreIndex: -100})
			},
			ref: func(x [][]float64) []float64 { return nllRef(x, false, r) }})
		cases = append(cases, gradCase{name: "nll_loss/weighted/" + r.String(), in: [][]int{{5, 4}, {4}},
			gen: []func(*rand.Rand) float64{normal, positive},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
				return tp.NLLLoss(x[0], labels, autograd.NLLOptions{Reduction: r, Ignore: true, IgnoreIndex: -100, Weight: x[1]})
			},
			ref: func(x [][]float64) []float64 { return nllRef(x, true, r) }})
	}
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { checkGrad(t, d, c) })
		}
	})
}

// reduceRef applies r to the float64 losses l (batch: dim 0).
func reduceRef(l []float64, r autograd.Reduction, batch int) []float64 {
	switch r {
	case autograd.ReductionSum:
		return []float64{sum(l)}
	case autograd.ReductionNone:
		return l
	case autograd.ReductionBatchMean:
		return []float64{sum(l) / float64(batch)}
	}
	return []float64{sum(l) / float64(len(l))}
}

// TestLossErrors: bad shapes, reductions, thresholds, labels and weights are errors naming the
// loss; a loss of no kept rows is NaN with a zero gradient, as in PyTorch.
func TestLossErrors(t *testing.T) {
	d := ops.CPU()
	for _, c := range []struct {
		name string
		f    func(tp *autograd.Tape, x, y, w autograd.Var) autograd.Var
		want string
	}{
		{"shapes", func(tp *autograd.Tape, x, _, w autograd.Var) autograd.Var { return tp.L1Loss(x, w, 0) }, "l1_loss: shapes [2 3] and [3] differ"},
		{"reduction", func(tp *autograd.Tape, x, y, _ autograd.Var) autograd.Var {
			return tp.BCEWithLogits(x, y, autograd.BCEWithLogitsOptions{Reduction: autograd.ReductionBatchMean})
		}, "bce_with_logits: reduction batchmean is not one of mean, sum, none"},
		{"reduction value", func(tp *autograd.Tape, x, y, _ autograd.Var) autograd.Var { return tp.HuberLoss(x, y, 1, 9) }, "reduction Reduction(9)"},
		{"beta", func(tp *autograd.Tape, x, y, _ autograd.Var) autograd.Var { return tp.SmoothL1Loss(x, y, -1, 0) }, "smooth_l1_loss: beta -1"},
		{"delta", func(tp *autograd.Tape, x, y, _ autograd.Var) autograd.Var { return tp.HuberLoss(x, y, 0, 0) }, "huber_loss: delta 0"},
		{"weight shape", func(tp *autograd.Tape, x, y, _ autograd.Var) autograd.Var {
			return tp.BCEWithLogits(x, y, autograd.BCEWithLogitsOptions{PosWeight: tp.Reshape(x, 6)})
		}, "pos_weight of shape [6] does not broadcast to the input's shape [2 3]"},
		{"label", func(tp *autograd.Tape, x, _, _ autograd.Var) autograd.Var {
			return tp.NLLLoss(x, []int{0, 3}, autograd.NLLOptions{})
		}, "nll_loss: label 3 at position 1 is outside [0, 3)"},
		{"negative label", func(tp *autograd.Tape, x, _, _ autograd.Var) autograd.Var {
			return tp.NLLLoss(x, []int{-100, 1}, autograd.NLLOptions{})
		}, "(to leave such rows out, set NLLOptions' Ignore: true, IgnoreIndex: -100)"},
		{"labels", func(tp *autograd.Tape, x, _, _ autograd.Var) autograd.Var {
			return tp.NLLLoss(x, []int{0}, autograd.NLLOptions{})
		}, "1 labels for log-probabilities of shape [2 3]"},
		{"class weights", func(tp *autograd.Tape, x, _, _ autograd.Var) autograd.Var {
			return tp.NLLLoss(x, []int{0, 1}, autograd.NLLOptions{Weight: tp.Reshape(x, 6)})
		}, "weight of shape [6] for 3 classes"},
		{"batchmean", func(tp *autograd.Tape, x, y, _ autograd.Var) autograd.Var {
			return tp.KLDiv(x, y, autograd.KLDivOptions{Reduction: autograd.ReductionBatchMean, LogTarget: true})
		}, ""},
	} {
		tp := autograd.NewTape(d)
		xb, yb, wb := upload(t, d, 1, 2, 3, 4, 5, 6), upload(t, d, 0, 1, 0, 1, 0.5, 0.5), upload(t, d, 1, 2, 3)
		x, y, w := tp.Leaf(xb, []int{2, 3}, true), tp.Const(yb, []int{2, 3}), tp.Const(wb, []int{3})
		v := c.f(tp, x, y, w)
		err := tp.Err()
		switch {
		case c.want == "" && (err != nil || !v.Valid()):
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || v.Valid()):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		tp.Reset()
		xb.Release()
		yb.Release()
		wb.Release()
	}
	// Every row ignored: the mean is NaN (PyTorch's too), the sum 0, the gradient zero.
	tp := autograd.NewTape(d)
	defer tp.Reset()
	xb := upload(t, d, 1, 2, 3, 4)
	defer xb.Release()
	x := tp.Leaf(xb, []int{2, 2}, true)
	mean := tp.NLLLoss(x, []int{-1, -1}, autograd.NLLOptions{Ignore: true, IgnoreIndex: -1})
	sumL := tp.NLLLoss(x, []int{-1, -1}, autograd.NLLOptions{Ignore: true, IgnoreIndex: -1, Reduction: autograd.ReductionSum})
	if err := tp.Backward(tp.Add(sumL, tp.Scale(tp.Detach(mean), 0))); err != nil {
		t.Fatal(err)
	}
	if m, s := values(t, tp.Value(mean)), values(t, tp.Value(sumL)); !math.IsNaN(m[0]) || s[0] != 0 {
		t.Errorf("no kept rows: mean %v, sum %v; want NaN, 0", m, s)
	}
	if g := values(t, tp.Grad(x)); g[0] != 0 || g[1] != 0 || g[2] != 0 || g[3] != 0 {
		t.Errorf("no kept rows: gradient %v, want zeros", g)
	}
}

// Binary classification from logits: the loss and its gradient σ(x) - y (over the batch size).
func ExampleTape_BCEWithLogits() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	logits := s.InputGrad([]float32{0, 2, -1}, 3)
	targets := s.Input([]float32{1, 1, 0}, 3)
	loss := s.BCEWithLogits(logits, targets, autograd.BCEWithLogitsOptions{})
	s.Backward(loss)
	g, _ := s.Grad(logits).Float32s()
	fmt.Printf("loss %.4f, gradient %.4f\n", s.Item(loss), g)
	// Output: loss 0.3778, gradient [-0.1667 -0.0397 0.0896]
}

// The negative log-likelihood of labels under log-probabilities, leaving out a padding row.
func ExampleTape_NLLLoss() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	logp := s.LogSoftmax(s.Input([]float32{2, 0, 0, 0, 1, 0, 5, 5, 5}, 3, 3))
	loss := s.NLLLoss(logp, []int{0, 1, -100}, autograd.NLLOptions{Ignore: true, IgnoreIndex: -100})
	perRow := s.NLLLoss(logp, []int{0, 1, -100}, autograd.NLLOptions{Ignore: true, IgnoreIndex: -100, Reduction: autograd.ReductionNone})
	rows, _ := s.Value(perRow).Float32s()
	fmt.Printf("mean %.4f over the kept rows, per row %.4f\n", s.Item(loss), rows)
	// Output: mean 0.3955 over the kept rows, per row [0.2395 0.5514 0.0000]
}

// L1, smooth L1 (beta 1) and Huber (delta 2) losses of the same residuals 0.5, -1.5 and 3.
func ExampleTape_SmoothL1Loss() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	x, y := s.Input([]float32{0.5, -1.5, 3}, 3), s.Input([]float32{0, 0, 0}, 3)
	for _, l := range []autograd.Var{
		s.L1Loss(x, y, autograd.ReductionNone),
		s.SmoothL1Loss(x, y, 1, autograd.ReductionNone),
		s.HuberLoss(x, y, 2, autograd.ReductionNone),
	} {
		v, _ := s.Value(l).Float32s()
		fmt.Println(v)
	}
	// Output:
	// [0.5 1.5 3]
	// [0.125 1 2.5]
	// [0.125 1.125 4]
}

// The KL divergence of a batch of two distributions from a model's log-probabilities, with
// PyTorch's batchmean reduction; a target probability of 0 contributes 0.
func ExampleTape_KLDiv() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	logp := s.LogSoftmax(s.Input([]float32{0, 0, 1, 2}, 2, 2))
	target := s.Input([]float32{0.5, 0.5, 1, 0}, 2, 2)
	kl := s.KLDiv(logp, target, autograd.KLDivOptions{Reduction: autograd.ReductionBatchMean})
	fmt.Printf("%.4f\n", s.Item(kl))
	// Output: 0.6566
}
