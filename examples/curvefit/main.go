// Command curvefit trains a small nonlinear model, y = a*tanh(w*x + b) + c, to noisy data with
// the kernels of package ops and hand-written gradients, on the CPU or a CUDA device. It prints
// the loss as it trains and the allocator telemetry at the end.
//
//	go run ./examples/curvefit                 # default device (CUDA when usable)
//	go run ./examples/curvefit -device cpu -steps 500
//
// -graph is accepted like in the other examples, but this program's step cannot be captured
// into a CUDA graph: the parameters live on the host and reach the kernels as scalar arguments
// (a graph would replay the first step's values), and every step downloads the loss and the
// gradients for the host's Adam. With -graph it says so and runs eagerly, with the same output
// otherwise; a captured form would keep the parameters in device buffers and use package
// autograd's optimizers (see examples/fashionmnist).
package main

import (
	"flag"
	"fmt"
	"log"
	"math"

	"github.com/torchlean-go/torchlean/ops"
)

func main() {
	device := flag.String("device", "auto", "cpu, cuda, cuda:N or auto")
	steps := flag.Int("steps", 300, "training steps")
	n := flag.Int("n", 1<<16, "number of samples")
	lr := flag.Float64("lr", 0.05, "Adam learning rate")
	seed := flag.Uint64("seed", 7, "random seed")
	graph := flag.Bool("graph", false, "capture the step into a CUDA graph: not possible for this program (host parameters, a download per step); it says so and runs eagerly")
	flag.Parse()
	switch {
	case flag.NArg() > 0:
		log.Fatalf("unexpected argument %q (flags go before it; see -h)", flag.Arg(0))
	case *steps < 1 || *n < 1:
		log.Fatalf("-steps and -n must be positive (got %d, %d)", *steps, *n)
	case !(*lr > 0) || math.IsInf(*lr, 0):
		log.Fatalf("-lr must be positive and finite (got %v)", *lr)
	}

	d, err := ops.Open(*device)
	if err != nil {
		log.Fatal(err)
	}
	sel := ops.DefaultSelection()
	fmt.Printf("device: %s", d)
	if *device == "auto" && d.Kind() == ops.KindCPU && sel.Reason != "" {
		fmt.Printf(" (%s)", sel.Reason)
	}
	fmt.Println()
	if *graph {
		fmt.Println("graph: this program's step cannot be captured (its parameters are host scalars and each step downloads the loss and gradients); running eagerly")
	}

	x, y, err := makeData(d, *n, *seed)
	if err != nil {
		log.Fatal(err)
	}
	m := model{a: 0.5, w: 0.5, b: 0, c: 0}
	opt := newAdam(*lr)
	for step := 1; step <= *steps; step++ {
		loss, grads, err := m.lossAndGrads(x, y)
		if err != nil {
			log.Fatal(err)
		}
		opt.step(m.params(), grads)
		if step == 1 || step%50 == 0 || step == *steps {
			fmt.Printf("step %4d  loss %.6f\n", step, loss)
		}
	}
	fmt.Printf("learned a=%.3f w=%.3f b=%.3f c=%.3f (data: a=2 w=1.5 b=-0.5 c=0.25, noise std 0.05)\n", m.a, m.w, m.b, m.c)
	x.Release()
	y.Release()
	fmt.Println("allocator:", d.Stats())
}

// makeData draws x ~ U[-3, 3) and y = 2*tanh(1.5x - 0.5) + 0.25 + N(0, 0.05^2) on the device.
func makeData(d *ops.Device, n int, seed uint64) (x, y *ops.Buffer, err error) {
	u, err := ops.RandUniform(d, n, ops.KeyOf(seed, 0))
	if err != nil {
		return nil, nil, err
	}
	x, err = affine(u, 6, -3)
	if err != nil {
		return nil, nil, err
	}
	clean := model{a: 2, w: 1.5, b: -0.5, c: 0.25}
	f, err := clean.forward(x)
	if err != nil {
		return nil, nil, err
	}
	noise, err := ops.RandNormal(d, n, 0, 0.05, ops.KeyOf(seed, 1))
	if err != nil {
		return nil, nil, err
	}
	y, err = ops.Add(f.yhat, noise)
	ops.ReleaseThen(nil, u, noise, f.z, f.h, f.yhat)
	return x, y, err
}

// affine returns s*x + t.
func affine(x *ops.Buffer, s, t float64) (*ops.Buffer, error) {
	tb, err := ops.Full(x.Device(), x.Len(), t)
	if err != nil {
		return nil, err
	}
	defer tb.Release()
	return ops.Axpy(tb, x, s)
}

type model struct{ a, w, b, c float64 }

func (m *model) params() []*float64 { return []*float64{&m.a, &m.w, &m.b, &m.c} }

type activations struct{ z, h, yhat *ops.Buffer }

// forward computes z = w*x + b, h = tanh(z), yhat = a*h + c.
func (m *model) forward(x *ops.Buffer) (activations, error) {
	z, err := affine(x, m.w, m.b)
	if err != nil {
		return activations{}, err
	}
	h, err := ops.Tanh(z)
	if err != nil {
		return activations{}, err
	}
	yhat, err := affine(h, m.a, m.c)
	return activations{z, h, yhat}, err
}

// lossAndGrads returns the mean squared error and its gradient with respect to (a, w, b, c).
func (m *model) lossAndGrads(x, y *ops.Buffer) (float64, []float64, error) {
	f, err := m.forward(x)
	if err != nil {
		return 0, nil, err
	}
	var temps []*ops.Buffer
	defer func() { ops.ReleaseThen(nil, temps...) }()
	keep := func(b *ops.Buffer, e error) *ops.Buffer {
		if e != nil && err == nil {
			err = e
		}
		if b != nil {
			temps = append(temps, b)
		}
		return b
	}
	temps = append(temps, f.z, f.h, f.yhat)
	r := keep(ops.Sub(f.yhat, y))
	loss := keep(ops.Mean(keep(ops.Mul(r, r))))
	dyhat := keep(ops.Scale(r, 2/float64(x.Len()))) // dL/dyhat
	dh := keep(ops.Scale(dyhat, m.a))               // dL/dh
	dz := keep(ops.TanhBwd(f.z, dh))                // dL/dz
	sums := []*ops.Buffer{
		keep(ops.Sum(keep(ops.Mul(dyhat, f.h)))), // dL/da
		keep(ops.Sum(keep(ops.Mul(dz, x)))),      // dL/dw
		keep(ops.Sum(dz)),                        // dL/db
		keep(ops.Sum(dyhat)),                     // dL/dc
	}
	if err != nil {
		return 0, nil, err
	}
	lv, err := loss.Float64s()
	if err != nil {
		return 0, nil, err
	}
	grads := make([]float64, len(sums))
	for i, s := range sums {
		v, err := s.Float64s()
		if err != nil {
			return 0, nil, err
		}
		grads[i] = v[0]
	}
	return lv[0], grads, nil
}

// adam is Adam with PyTorch's defaults (betas 0.9, 0.999, eps 1e-8) on host scalars.
type adam struct {
	lr   float64
	t    int
	m, v []float64
}

func newAdam(lr float64) *adam { return &adam{lr: lr} }

func (o *adam) step(params []*float64, grads []float64) {
	if o.m == nil {
		o.m, o.v = make([]float64, len(params)), make([]float64, len(params))
	}
	o.t++
	c1 := 1 - math.Pow(0.9, float64(o.t))
	c2 := 1 - math.Pow(0.999, float64(o.t))
	for i, p := range params {
		o.m[i] = 0.9*o.m[i] + 0.1*grads[i]
		o.v[i] = 0.999*o.v[i] + 0.001*grads[i]*grads[i]
		*p -= o.lr * (o.m[i] / c1) / (math.Sqrt(o.v[i]/c2) + 1e-8)
	}
}
