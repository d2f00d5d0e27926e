package autograd_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// poolRef64 is a pooling in float64 over the last len(p.Kernel) axes of shape: kind "max",
// "avg" or "smooth" (padding read as 0, β = p.Beta).
func poolRef64(kind string, x []float64, shape []int, p autograd.PoolParams) []float64 {
	d := len(p.Kernel)
	lead, in := shape[:len(shape)-d], shape[len(shape)-d:]
	stride, pad := p.Stride, p.Padding
	if stride == nil {
		stride = p.Kernel
	}
	if pad == nil {
		pad = make([]int, d)
	}
	out := make([]int, d)
	for a := range d {
		out[a] = ops.PoolOutDim(in[a], p.Kernel[a], stride[a], pad[a])
	}
	nc, inVol, outVol, kv := numel(lead), numel(in), numel(out), numel(p.Kernel)
	y := make([]float64, 0, nc*outVol)
	for n := range nc {
		for o := range outVol {
			oc := coords(o, out)
			var vals []float64
			cells := 0
			for w := range kv {
				wc := coords(w, p.Kernel)
				xc, ok := make([]int, d), true
				for a := range d {
					xc[a] = oc[a]*stride[a] - pad[a] + wc[a]
					ok = ok && xc[a] >= 0 && xc[a] < in[a]
				}
				switch {
				case ok:
					vals = append(vals, x[n*inVol+flat(xc, in)])
					cells++
				case kind == "smooth":
					vals = append(vals, 0)
				}
			}
			switch kind {
			case "max":
				y = append(y, slices.Max(vals))
			case "avg":
				den := float64(cells)
				if p.CountIncludePad {
					den = float64(kv)
				}
				y = append(y, sum(vals)/den)
			case "smooth":
				piv := slices.Max(vals)
				if p.Beta < 0 {
					piv = slices.Min(vals)
				}
				var s float64
				for _, v := range vals {
					s += math.Exp(p.Beta * (v - piv))
				}
				y = append(y, piv+math.Log(s)/p.Beta)
			}
		}
	}
	return y
}

// poolGradShapes are the gradient-checked geometries: rank 1, 2 and 3, odd sizes, strides above
// 1, padding, overlapping and disjoint windows, one sample and batches.
var poolGradShapes = []struct {
	shape []int
	p     autograd.PoolParams
}{
	{[]int{2, 11}, autograd.PoolParams{Kernel: []int{3}, Stride: []int{2}, Padding: []int{1}}},
	{[]int{2, 3, 9}, autograd.PoolParams{Kernel: []int{2}}},
	{[]int{3, 7, 5}, autograd.PoolParams{Kernel: []int{3, 2}, Stride: []int{2, 1}, Padding: []int{1, 1}}},
	{[]int{2, 2, 9, 7}, autograd.PoolParams{Kernel: []int{3, 3}, Stride: []int{2, 2}, Padding: []int{1, 1}}},
	{[]int{1, 2, 8, 8}, autograd.PoolParams{Kernel: []int{2, 2}}},
	{[]int{2, 5, 4, 6}, autograd.PoolParams{Kernel: []int{2, 3, 2}, Stride: []int{1, 2, 3}, Padding: []int{1, 1, 0}}},
	{[]int{2, 1, 4, 5, 3}, autograd.PoolParams{Kernel: []int{2, 2, 2}, Stride: []int{1, 1, 1}}},
}

func TestGradientsPool(t *testing.T) {
	var cs []gradCase
	for _, g := range poolGradShapes {
		for _, kind := range []string{"max", "avg", "avg_nopad", "smooth", "smooth_min"} {
			p := g.p
			op := (*autograd.Tape).MaxPool
			ref := "max"
			switch kind {
			case "avg":
				p.CountIncludePad, op, ref = true, (*autograd.Tape).AvgPool, "avg"
			case "avg_nopad":
				op, ref = (*autograd.Tape).AvgPool, "avg"
			case "smooth":
				p.Beta, op, ref = 1.5, (*autograd.Tape).SmoothMaxPool, "smooth"
			case "smooth_min":
				p.Beta, op, ref = -0.7, (*autograd.Tape).SmoothMaxPool, "smooth"
			}
			shape := g.shape
			cs = append(cs, gradCase{name: fmt.Sprintf("%s_pool%v/k%v/s%v/p%v", kind, shape, p.Kernel, p.Stride, p.Padding),
				in: [][]int{shape},
				op: func(tp *autograd.Tape, v []autograd.Var) autograd.Var {
					// A product upstream, so that the gradient flows through the pooling into
					// another op's VJP.
					return op(tp, tp.Mul(v[0], v[0]), p)
				},
				ref: func(v [][]float64) []float64 {
					sq := make([]float64, len(v[0]))
					for i, x := range v[0] {
						sq[i] = x * x
					}
					return poolRef64(ref, sq, shape, p)
				}})
		}
	}
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range cs {
			t.Run(c.name, func(t *testing.T) { checkGrad(t, d, c) })
		}
	})
}

// TestPoolTapeForms: the 2-D forms are the N-D ones with one stride and padding (and
// count_include_pad), on one sample and on a batch; ties send max pooling's gradient to the first
// maximum; errors name the geometry.
func TestPoolTapeForms(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		tp := autograd.NewTape(d)
		defer tp.Reset()
		xb := upload(t, d, 1, 2, 2, 0, 5, 5, 5, 5, 0, -1, 3, 3, 0, 1, 3, 4)
		defer xb.Release()
		x := tp.Leaf(xb, []int{1, 4, 4}, true)
		y := tp.MaxPool2d(x, 2, 2, 2)
		if err := tp.Backward(tp.Sum(y)); err != nil {
			t.Fatal(err)
		}
		// Ties go to the first maximum: windows {1 2 5 5} and {2 0 5 5} pick row 1's first 5.
		if got, want := values(t, tp.Value(y)), []float64{5, 5, 1, 4}; !slices.Equal(got, want) {
			t.Errorf("max pool = %v, want %v", got, want)
		}
		if got := tp.Shape(y); !slices.Equal(got, []int{1, 2, 2}) {
			t.Errorf("shape %v", got)
		}
		want := []float64{0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1}
		if got := values(t, tp.Grad(x)); !slices.Equal(got, want) {
			t.Errorf("max pool gradient = %v, want %v", got, want)
		}
		tp2 := autograd.NewTape(d)
		defer tp2.Reset()
		xa := tp2.Leaf(xb, []int{1, 1, 4, 4}, true)
		ya := tp2.AvgPool2dPad(xa, 3, 3, 2, 1)
		yb := tp2.AvgPool(xa, autograd.PoolParams{Kernel: []int{3, 3}, Stride: []int{2, 2}, Padding: []int{1, 1}, CountIncludePad: true})
		if a, b := values(t, tp2.Value(ya)), values(t, tp2.Value(yb)); !slices.Equal(a, b) || len(a) != 4 {
			t.Errorf("AvgPool2dPad %v, AvgPool %v", a, b)
		}
		if got, want := values(t, tp2.Value(ya))[0], float64(float32(13)/float32(9)); got != want {
			t.Errorf("avg window 0 = %v, want (1+2+5+5)/9 = %v (the padding counted)", got, want)
		}
		bad := tp2.MaxPool2dPad(xa, 2, 2, 0, 0)
		if bad.Valid() || tp2.Err() == nil || !strings.Contains(tp2.Err().Error(), "autograd: max_pool: axis 0 has kernel 2, stride 0") {
			t.Errorf("stride 0: %v", tp2.Err())
		}
	})
}

// torchPool is testdata/torch_pool.json, written by testdata/torch_pool.py with PyTorch 1.13 on
// the CPU in float64 from float32 inputs.
type torchPool struct {
	Torch string
	Cases []struct {
		Name, Kind                     string
		Shape, Kernel, Stride, Padding []int
		CountIncludePad                bool `json:"count_include_pad"`
		Beta                           float64
		X, Dy, Y, Dx                   []float64
		YShape                         []int `json:"y_shape"`
	}
}

// TestPoolAgainstTorch: values and input gradients of max and average pooling (rank 1 to 3,
// strides, padding, count_include_pad on and off) match PyTorch's F.max_pool*d/avg_pool*d, and
// smooth max pooling (β of both signs, zero padding) matches logsumexp over PyTorch's unfolded
// windows, within float32 rounding.
func TestPoolAgainstTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/torch_pool.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref torchPool
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) < 10 {
		t.Fatalf("%d cases", len(ref.Cases))
	}
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range ref.Cases {
			tp := autograd.NewTape(d)
			bx, bdy := upload(t, d, c.X...), upload(t, d, c.Dy...)
			x := tp.Leaf(bx, c.Shape, true)
			p := autograd.PoolParams{Kernel: c.Kernel, Stride: c.Stride, Padding: c.Padding,
				CountIncludePad: c.CountIncludePad, Beta: c.Beta}
			var y autograd.Var
			switch c.Kind {
			case "max":
				y = tp.MaxPool(x, p)
			case "avg":
				y = tp.AvgPool(x, p)
			default:
				y = tp.SmoothMaxPool(x, p)
			}
			if err := tp.BackwardWith(y, bdy); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			if !slices.Equal(tp.Shape(y), c.YShape) {
				t.Errorf("%s: shape %v, PyTorch %v", c.Name, tp.Shape(y), c.YShape)
			}
			for _, q := range []struct {
				what      string
				got, want []float64
			}{{"y", values(t, tp.Value(y)), c.Y}, {"dx", values(t, tp.Grad(x)), c.Dx}} {
				if len(q.got) != len(q.want) {
					t.Fatalf("%s %s: %d values, PyTorch %d", c.Name, q.what, len(q.got), len(q.want))
				}
				for i := range q.want {
					if math.Abs(q.got[i]-q.want[i]) > 2e-6*(1+math.Abs(q.want[i])) {
						t.Errorf("%s %s[%d] = %v, PyTorch %v", c.Name, q.what, i, q.got[i], q.want[i])
						break
					}
				}
			}
			tp.Reset()
			bx.Release()
			bdy.Release()
		}
	})
}
