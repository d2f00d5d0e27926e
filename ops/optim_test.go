package ops

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
)

// refAdam is one element of one step of PyTorch's Adam/AdamW (torch.optim._single_tensor_adam)
// in float64, from the float32 state (p, m, v) and gradient g. It also returns scales of the
// terms of m, v and the update, for the tolerances.
func refAdam(h AdamParams, step int, p, g, m, v float64) (np, nm, nv, mScale, vScale, uScale float64) {
	gs := math.Abs(g)
	if h.Decoupled {
		p *= 1 - h.LR*h.WeightDecay
	} else if h.WeightDecay != 0 {
		g += h.WeightDecay * p
		gs += h.WeightDecay * math.Abs(p)
	}
	mScale = h.Beta1*math.Abs(m) + (1-h.Beta1)*gs
	vScale = h.Beta2*v + (1-h.Beta2)*gs*gs
	nm = h.Beta1*m + (1-h.Beta1)*g
	nv = h.Beta2*v + (1-h.Beta2)*g*g
	bc1 := 1 - math.Pow(h.Beta1, float64(step))
	bc2 := 1 - math.Pow(h.Beta2, float64(step))
	stepSize := h.LR / bc1
	den := math.Sqrt(nv)/math.Sqrt(bc2) + h.Eps
	return p - stepSize*nm/den, nm, nv, mScale, vScale, stepSize * mScale / den
}

// refSGD is one element of one step of PyTorch's SGD (torch.optim._single_tensor_sgd) in
// float64, with the scale of the update's terms.
func refSGD(h SGDParams, first bool, p, g, b float64) (np, nb, uScale float64) {
	ds := math.Abs(g)
	if h.WeightDecay != 0 {
		g += h.WeightDecay * p
		ds += h.WeightDecay * math.Abs(p)
	}
	if h.Momentum != 0 {
		bs := ds
		if first {
			b = g
		} else {
			b = h.Momentum*b + (1-h.Dampening)*g
			bs = h.Momentum*math.Abs(b) + math.Abs(1-h.Dampening)*ds
		}
		if h.Nesterov {
			g += h.Momentum * b
			ds += h.Momentum * bs
		} else {
			g, ds = b, bs
		}
	}
	return p - h.LR*g, b, h.LR * ds
}

// refRMSprop is one element of one step of PyTorch's RMSprop (torch.optim._single_tensor_rmsprop)
// in float64, with the scale of the update (for the tolerances).
func refRMSprop(h RMSpropParams, p, g, sq, ga, b float64) (np, nsq, nga, nb, uScale float64) {
	if h.WeightDecay != 0 {
		g += h.WeightDecay * p
	}
	nsq = h.Alpha*sq + (1-h.Alpha)*g*g
	avg := math.Sqrt(nsq)
	if h.Centered {
		nga = h.Alpha*ga + (1-h.Alpha)*g
		avg = math.Sqrt(nsq - nga*nga)
	}
	avg += h.Eps
	if h.Momentum != 0 {
		nb = h.Momentum*b + g/avg
		return p - h.LR*nb, nsq, nga, nb, h.LR * (h.Momentum*math.Abs(b) + math.Abs(g)/avg)
	}
	return p - h.LR*g/avg, nsq, nga, nb, h.LR * math.Abs(g) / avg
}

// peek downloads b (which stays live).
func peek(t *testing.T, b *Buffer) []float32 {
	t.Helper()
	f, err := b.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// within reports whether got is within tol of want (NaN never is).
func within(got float32, want, tol float64) bool { return math.Abs(float64(got)-want) <= tol }

// TestAdamStepReference runs several Adam and AdamW steps on every device and checks each
// against PyTorch's formulas in float64 from the same starting state: the only differences are
// float32 roundings, a few units in the last place of each term.
func TestAdamStepReference(t *testing.T) {
	const n = 70001 // several CPU slices
	cases := []struct {
		name  string
		h     AdamParams
		steps []int
	}{
		{"adam", AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, []int{1, 2, 3, 4}},
		{"adam_l2", AdamParams{LR: 3e-3, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1}, []int{1, 2, 3}},
		{"adamw", AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2, Decoupled: true}, []int{1, 2, 3, 4}},
		{"adamw_late", AdamParams{LR: 0.1, Beta1: 0, Beta2: 0.5, Eps: 1e-3, WeightDecay: 0.5, Decoupled: true}, []int{1000, 1001}},
	}
	for _, d := range devices(t) {
		for _, c := range cases {
			t.Run(d.Kind().String()+"/"+c.name, func(t *testing.T) {
				base := d.Stats().LiveBytes
				param := mustBuf(t, d, randFloats(n, 1))
				m, _ := Zeros(d, n)
				v, _ := Zeros(d, n)
				defer ReleaseThen(nil, param, m, v)
				for k, step := range c.steps {
					gh := randFloats(n, uint64(10+k))
					grad := mustBuf(t, d, gh)
					p0, m0, v0 := peek(t, param), peek(t, m), peek(t, v)
					if err := AdamStep(param, grad, m, v, c.h, step); err != nil {
						t.Fatal(err)
					}
					if got := download(t, grad, nil); !sameBits(got, gh) { // releases grad
						t.Fatal("the gradient changed")
					}
					p1, m1, v1 := peek(t, param), peek(t, m), peek(t, v)
					for i := range n {
						wp, wm, wv, ms, vs, us := refAdam(c.h, step, float64(p0[i]), float64(gh[i]), float64(m0[i]), float64(v0[i]))
						if !within(m1[i], wm, 4e-7*ms) || !within(v1[i], wv, 4e-7*vs) ||
							!within(p1[i], wp, 2e-7*math.Abs(wp)+2e-6*us) {
							t.Fatalf("step %d, element %d (p %g, g %g, m %g, v %g): got (%g, %g, %g), want (%g, %g, %g)",
								step, i, p0[i], gh[i], m0[i], v0[i], p1[i], m1[i], v1[i], wp, wm, wv)
						}
					}
				}
				ReleaseThen(nil, param, m, v)
				if live := d.Stats().LiveBytes; live != base {
					t.Errorf("live bytes %d, %d before", live, base)
				}
			})
		}
	}
}

// TestSGDStepReference is TestAdamStepReference for SGD with and without momentum.
func TestSGDStepReference(t *testing.T) {
	const n = 70001
	cases := []struct {
		name string
		h    SGDParams
	}{
		{"plain", SGDParams{LR: 0.1}},
		{"weight_decay", SGDParams{LR: 0.01, WeightDecay: 0.3}},
		{"momentum", SGDParams{LR: 0.05, Momentum: 0.9}},
		{"dampening", SGDParams{LR: 0.05, Momentum: 0.9, Dampening: 0.3, WeightDecay: 1e-2}},
		{"nesterov", SGDParams{LR: 0.05, Momentum: 0.8, Nesterov: true, WeightDecay: 1e-4}},
	}
	for _, d := range devices(t) {
		for _, c := range cases {
			t.Run(d.Kind().String()+"/"+c.name, func(t *testing.T) {
				param := mustBuf(t, d, randFloats(n, 2))
				buf := mustBuf(t, d, randFloats(n, 3)) // garbage: the first step ignores it
				defer ReleaseThen(nil, param, buf)
				for step := range 4 {
					gh := randFloats(n, uint64(20+step))
					grad := mustBuf(t, d, gh)
					p0, b0 := peek(t, param), peek(t, buf)
					if err := SGDStep(param, grad, buf, c.h, step == 0); err != nil {
						t.Fatal(err)
					}
					grad.Release()
					p1, b1 := peek(t, param), peek(t, buf)
					for i := range n {
						wp, wb, us := refSGD(c.h, step == 0, float64(p0[i]), float64(gh[i]), float64(b0[i]))
						if !within(p1[i], wp, 2e-7*math.Abs(wp)+1e-6*us) || !within(b1[i], wb, 1e-6*us/c.h.LR) {
							t.Fatalf("step %d, element %d (p %g, g %g, b %g): got (%g, %g), want (%g, %g)",
								step, i, p0[i], gh[i], b0[i], p1[i], b1[i], wp, wb)
						}
					}
				}
			})
		}
	}
}

// TestRMSpropStepReference is TestAdamStepReference for RMSprop, plain, centered, with momentum
// and weight decay. The state starts where the centered variance is positive (PyTorch's too
// takes the square root of a negative number otherwise).
func TestRMSpropStepReference(t *testing.T) {
	const n = 70001
	cases := []struct {
		name string
		h    RMSpropParams
	}{
		{"plain", RMSpropParams{LR: 1e-2, Alpha: 0.99, Eps: 1e-8}},
		{"weight_decay", RMSpropParams{LR: 1e-3, Alpha: 0.9, Eps: 1e-6, WeightDecay: 0.3}},
		{"momentum", RMSpropParams{LR: 1e-2, Alpha: 0.99, Eps: 1e-8, Momentum: 0.9}},
		{"centered", RMSpropParams{LR: 1e-2, Alpha: 0.95, Eps: 1e-8, Centered: true}},
		{"all", RMSpropParams{LR: 3e-3, Alpha: 0.9, Eps: 1e-5, WeightDecay: 1e-2, Momentum: 0.5, Centered: true}},
	}
	for _, d := range devices(t) {
		for _, c := range cases {
			t.Run(d.Kind().String()+"/"+c.name, func(t *testing.T) {
				sqh, gah := randFloats(n, 4), randFloats(n, 5)
				for i := range sqh {
					gah[i] *= 0.1
					sqh[i] = float32(math.Abs(float64(sqh[i]))+0.5) + gah[i]*gah[i]
				}
				param, sq, ga, buf := mustBuf(t, d, randFloats(n, 2)), mustBuf(t, d, sqh), mustBuf(t, d, gah), mustBuf(t, d, randFloats(n, 3))
				defer ReleaseThen(nil, param, sq, ga, buf)
				for step := range 4 {
					gh := randFloats(n, uint64(30+step))
					grad := mustBuf(t, d, gh)
					p0, s0, a0, b0 := peek(t, param), peek(t, sq), peek(t, ga), peek(t, buf)
					if err := RMSpropStep(param, grad, sq, ga, buf, c.h); err != nil {
						t.Fatal(err)
					}
					grad.Release()
					p1, s1, a1, b1 := peek(t, param), peek(t, sq), peek(t, ga), peek(t, buf)
					for i := range n {
						wp, ws, wa, wb, us := refRMSprop(c.h, float64(p0[i]), float64(gh[i]), float64(s0[i]), float64(a0[i]), float64(b0[i]))
						ok := within(p1[i], wp, 2e-7*math.Abs(wp)+1e-5*us) && within(s1[i], ws, 1e-6*ws)
						if c.h.Centered {
							ok = ok && within(a1[i], wa, 1e-6*(math.Abs(float64(a0[i]))+math.Abs(float64(gh[i]))+1))
						} else {
							ok = ok && a1[i] == a0[i]
						}
						if c.h.Momentum != 0 {
							ok = ok && within(b1[i], wb, 1e-5*us/c.h.LR)
						} else {
							ok = ok && math.Float32bits(b1[i]) == math.Float32bits(b0[i])
						}
						if !ok {
							t.Fatalf("step %d, element %d (p %g, g %g, sq %g, ga %g, b %g): got (%g, %g, %g, %g), want (%g, %g, %g, %g)",
								step, i, p0[i], gh[i], s0[i], a0[i], b0[i], p1[i], s1[i], a1[i], b1[i], wp, ws, wa, wb)
						}
					}
				}
			})
		}
	}
}

// TestRMSpropScalars pins the scalars the kernel reads and that they follow the hyperparameters.
func TestRMSpropScalars(t *testing.T) {
	d := CPU()
	o, err := NewRMSprop(d)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Release()
	p, g, sq := mustBuf(t, d, []float32{1}), mustBuf(t, d, []float32{1}), mustBuf(t, d, []float32{0})
	defer ReleaseThen(nil, p, g, sq)
	for _, h := range []RMSpropParams{{LR: 1e-2, Alpha: 0.99, Eps: 1e-8}, {LR: 0.5, Alpha: 0.9, Eps: 0, WeightDecay: 0.25, Momentum: 0.75}} {
		buf := mustBuf(t, d, []float32{0})
		if err := o.Step(p, g, sq, nil, buf, h); err != nil {
			t.Fatal(err)
		}
		buf.Release()
		want := []float32{float32(h.LR), float32(h.Alpha), float32(1 - h.Alpha), float32(h.Eps), float32(h.WeightDecay), float32(h.Momentum)}
		if got := peek(t, o.sc); !sameBits(got, want) {
			t.Errorf("scalars of %+v: %v, want %v", h, got, want)
		}
	}
}

// TestAdamScalars pins the scalars of the documented formulas, as adam_scalars' twin computes
// them from the hyperparameters Adam uploads, and the step counts it advances.
func TestAdamScalars(t *testing.T) {
	h := AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2, Decoupled: true}
	scalars := func(h AdamParams, step uint64) [9]float32 {
		sc, steps := make([]float32, 18), make([]float32, 4)
		cpu.SetCountAt(steps, 1, step-1)
		cpu.AdamScalars(sc, steps, adamHyper(h), []uint32{1}, 0, 1)
		if got := cpu.CountAt(steps, 1); got != step {
			t.Errorf("step count %d after the scalars of step %d", got, step)
		}
		return [9]float32(sc[9:])
	}
	got := scalars(h, 1)
	want := [9]float32{0.9, float32(1 - 0.9), 0.999, float32(1 - 0.999), float32(1e-3 / (1 - 0.9)),
		float32(math.Sqrt(1 - 0.999)), 1e-8, 0, float32(1 - 1e-5)}
	if got != want {
		t.Errorf("AdamW scalars at step 1: %v, want %v", got, want)
	}
	h.Decoupled = false
	if s := scalars(h, 3); s[7] != float32(1e-2) || s[8] != 1 || s[4] != float32(1e-3/(1-0.9*0.9*0.9)) {
		t.Errorf("Adam scalars at step 3: %v", s)
	}
	if s := scalars(h, 1<<20); s[4] != float32(1e-3) || s[5] != 1 {
		t.Errorf("Adam scalars at step 2^20: %v (the corrections vanish)", s)
	}
}

// TestOptimErrors: bad hyperparameters and operands are errors; nothing is updated.
func TestOptimErrors(t *testing.T) {
	d := CPU()
	p, g, m, v := mustBuf(t, d, []float32{1, 2}), mustBuf(t, d, []float32{1, 1}), mustBuf(t, d, []float32{0, 0}), mustBuf(t, d, []float32{0, 0})
	short := mustBuf(t, d, []float32{0})
	defer ReleaseThen(nil, p, g, m, v, short)
	adam := AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	for _, c := range []struct {
		err  error
		want string
	}{
		{AdamStep(p, g, m, v, AdamParams{LR: 1e-3, Beta1: 1, Beta2: 0.999, Eps: 1e-8}, 1), "betas"},
		{AdamStep(p, g, m, v, AdamParams{LR: -1, Beta2: 0.5, Eps: 1}, 1), "learning rate"},
		{AdamStep(p, g, m, v, AdamParams{LR: 1, Beta2: 0.5}, 1), "eps 0"},
		{AdamStep(p, g, m, v, AdamParams{LR: 1, Beta2: 0.5, Eps: 1, WeightDecay: math.NaN()}, 1), "weight decay"},
		{AdamStep(p, g, m, v, adam, 0), "step 0"},
		{AdamStep(p, g, short, v, adam, 1), "operand 2 has 1 elements"},
		{AdamStep(p, g, m, m, adam, 1), "distinct"},
		{SGDStep(p, g, nil, SGDParams{LR: 0.1, Momentum: 0.9}, true), "nil buffer"},
		{SGDStep(p, g, nil, SGDParams{LR: 0.1, Nesterov: true}, true), "Nesterov"},
		{SGDStep(p, g, nil, SGDParams{LR: math.Inf(1)}, true), "learning rate"},
		{SGDStep(p, g, nil, SGDParams{LR: 1e300}, true), "learning rate 1e+300 is not a finite float32"},
		{AdamStep(p, g, m, v, AdamParams{LR: 1, Beta2: 0.5, Eps: 1e-50}, 1), "eps 1e-50 is not a finite float32 > 0"},
		{SGDStep(p, short, nil, SGDParams{LR: 0.1}, true), "operand 1 has 1 elements"},
		{RMSpropStep(p, g, m, nil, nil, RMSpropParams{LR: -1, Alpha: 0.99}), "rmsprop: learning rate -1"},
		{RMSpropStep(p, g, m, nil, nil, RMSpropParams{LR: 1, Alpha: math.NaN()}), "alpha NaN"},
		{RMSpropStep(p, g, m, nil, nil, RMSpropParams{LR: 1, Alpha: 0.9, Momentum: -0.5}), "momentum -0.5"},
		{RMSpropStep(p, g, m, nil, nil, RMSpropParams{LR: 1, Alpha: 0.9, Eps: math.Inf(1)}), "eps +Inf"},
		{RMSpropStep(p, g, m, nil, nil, RMSpropParams{LR: 1, Alpha: 0.9, Centered: true}), "nil buffer"},
		{RMSpropStep(p, g, m, nil, nil, RMSpropParams{LR: 1, Alpha: 0.9, Momentum: 0.9}), "nil buffer"},
		{RMSpropStep(p, g, m, m, nil, RMSpropParams{LR: 1, Alpha: 0.9, Centered: true}), "distinct"},
		{RMSpropStep(p, g, short, nil, nil, RMSpropParams{LR: 1, Alpha: 0.9}), "operand 2 has 1 elements"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want one mentioning %q", c.err, c.want)
		}
	}
	if got := peek(t, p); !sameBits(got, []float32{1, 2}) {
		t.Errorf("a failed step changed the parameter: %v", got)
	}
	// Without momentum the buffer is not used; empty tensors are fine.
	if err := SGDStep(p, g, nil, SGDParams{LR: 0.5}, false); err != nil {
		t.Error(err)
	}
	e, _ := Zeros(d, 0)
	if err := AdamStep(e, e, e, e, adam, 1); err == nil {
		t.Error("the same empty buffer four times: want the distinctness error")
	}
	e2, _ := Zeros(d, 0)
	e3, _ := Zeros(d, 0)
	e4, _ := Zeros(d, 0)
	if err := AdamStep(e, e2, e3, e4, adam, 1); err != nil {
		t.Error(err)
	}
	ReleaseThen(nil, e, e2, e3, e4)
	p.Release()
	if err := SGDStep(p, g, nil, SGDParams{LR: 0.5}, false); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("step on a released parameter: %v", err)
	}
}

// One RMSprop step with PyTorch's defaults on the CPU: from zero state, square_avg becomes
// 0.01*g² and the update is lr*g/(sqrt(0.01*g²) + eps), about 0.1*sign(g).
func ExampleRMSpropStep() {
	d := CPU()
	param, _ := FromFloat32(d, []float32{1, 2})
	grad, _ := FromFloat32(d, []float32{0.5, -4})
	squareAvg, _ := Zeros(d, 2)
	defer ReleaseThen(nil, param, grad, squareAvg)
	err := RMSpropStep(param, grad, squareAvg, nil, nil, RMSpropParams{LR: 1e-2, Alpha: 0.99, Eps: 1e-8})
	p, _ := param.Float32s()
	sq, _ := squareAvg.Float32s()
	fmt.Printf("%.4f %.4f %v\n", p, sq, err)
	// Output: [0.9000 2.1000] [0.0025 0.1600] <nil>
}
