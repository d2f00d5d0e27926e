package autograd_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// convGeo is one convolution for the tests: sizes and options.
type convGeo struct {
	batch, cin, cout int
	in, k            []int
	o                autograd.ConvOptions
	transposed       bool
	unbatched        bool
}

func perAxis(v []int, a, def int) int {
	switch len(v) {
	case 0:
		return def
	case 1:
		return v[0]
	}
	return v[a]
}

// outSizes returns the output's spatial sizes.
func (c convGeo) outSizes() []int {
	out := make([]int, len(c.in))
	for a := range c.in {
		s, p, d := perAxis(c.o.Stride, a, 1), perAxis(c.o.Padding, a, 0), perAxis(c.o.Dilation, a, 1)
		span := d*(c.k[a]-1) + 1
		if c.transposed {
			out[a] = max(0, (c.in[a]-1)*s-2*p+span+perAxis(c.o.OutputPadding, a, 0))
		} else if c.in[a]+2*p >= span {
			out[a] = (c.in[a]+2*p-span)/s + 1
		}
	}
	return out
}

func (c convGeo) groups() int { return max(c.o.Groups, 1) }

func (c convGeo) shapes() (x, w, y []int) {
	g := c.groups()
	x = append([]int{c.batch, c.cin}, c.in...)
	if c.transposed {
		w = append([]int{c.cin, c.cout / g}, c.k...)
	} else {
		w = append([]int{c.cout, c.cin / g}, c.k...)
	}
	y = append([]int{c.batch, c.cout}, c.outSizes()...)
	if c.unbatched {
		x, y = x[1:], y[1:]
	}
	return x, w, y
}

func prod(v []int) int {
	p := 1
	for _, x := range v {
		p *= x
	}
	return p
}

// unflat writes the row-major coordinates of i in dims.
func unflat(i int, dims []int) []int {
	c := make([]int, len(dims))
	for a := len(dims) - 1; a >= 0; a-- {
		c[a] = i % dims[a]
		i /= dims[a]
	}
	return c
}

// ref computes the convolution in float64 by its definition: every (input cell, kernel offset,
// output cell) triple that the geometry links adds x*w to the output.
func (c convGeo) ref(x, w, b []float64) []float64 {
	out := c.outSizes()
	inP, outP, kP := prod(c.in), prod(out), prod(c.k)
	g := c.groups()
	y := make([]float64, c.batch*c.cout*outP)
	rank := len(c.in)
	for n := range c.batch {
		for co := range c.cout {
			for o := range outP {
				if b != nil {
					y[(n*c.cout+co)*outP+o] = b[co]
				}
			}
		}
		// link input cell i (channel ci) with output cell o (channel co) through offset kk
		for ci := range c.cin {
			for i := range inP {
				ic := unflat(i, c.in)
				for kk := range kP {
					kc := unflat(kk, c.k)
					if !c.transposed {
						continue
					}
					// transposed: o = i*s - p + kk*d
					oi, ok := 0, true
					for a := range rank {
						v := ic[a]*perAxis(c.o.Stride, a, 1) - perAxis(c.o.Padding, a, 0) + kc[a]*perAxis(c.o.Dilation, a, 1)
						ok = ok && v >= 0 && v < out[a]
						oi = oi*max(out[a], 1) + v
					}
					if !ok {
						continue
					}
					grp := ci / (c.cin / g)
					for col := range c.cout / g {
						co := grp*(c.cout/g) + col
						y[(n*c.cout+co)*outP+oi] += x[(n*c.cin+ci)*inP+i] * w[(ci*(c.cout/g)+col)*kP+kk]
					}
				}
			}
		}
		if c.transposed {
			continue
		}
		for co := range c.cout {
			grp := co / (c.cout / g)
			for o := range outP {
				oc := unflat(o, out)
				sum := 0.0
				for cl := range c.cin / g {
					ci := grp*(c.cin/g) + cl
					for kk := range kP {
						kc := unflat(kk, c.k)
						ii, ok := 0, true
						for a := range rank {
							v := oc[a]*perAxis(c.o.Stride, a, 1) - perAxis(c.o.Padding, a, 0) + kc[a]*perAxis(c.o.Dilation, a, 1)
							ok = ok && v >= 0 && v < c.in[a]
							ii = ii*c.in[a] + v
						}
						if ok {
							sum += x[(n*c.cin+ci)*inP+ii] * w[(co*(c.cin/g)+cl)*kP+kk]
						}
					}
				}
				y[(n*c.cout+co)*outP+o] += sum
			}
		}
	}
	return y
}

func convGeos() []convGeo {
	return []convGeo{
		{batch: 2, cin: 3, cout: 4, in: []int{7}, k: []int{3}, o: autograd.ConvOptions{Padding: []int{1}}},
		{batch: 1, cin: 2, cout: 3, in: []int{9}, k: []int{2}, o: autograd.ConvOptions{Stride: []int{3}, Dilation: []int{2}}},
		{batch: 1, cin: 4, cout: 4, in: []int{8}, k: []int{3}, o: autograd.ConvOptions{Padding: []int{2}, Groups: 4}},
		{batch: 2, cin: 2, cout: 3, in: []int{5, 7}, k: []int{3, 2}, o: autograd.ConvOptions{Stride: []int{2, 1}, Padding: []int{1}}},
		{batch: 1, cin: 4, cout: 6, in: []int{6, 5}, k: []int{3, 3}, o: autograd.ConvOptions{Padding: []int{2}, Dilation: []int{2, 1}, Groups: 2}},
		{batch: 3, cin: 3, cout: 2, in: []int{5, 5}, k: []int{1, 1}},
		{batch: 1, cin: 2, cout: 3, in: []int{5, 6}, k: []int{3, 3}, o: autograd.ConvOptions{Stride: []int{2}, Padding: []int{1}}, unbatched: true},
		{batch: 1, cin: 2, cout: 2, in: []int{4, 3, 5}, k: []int{2, 2, 3}, o: autograd.ConvOptions{Stride: []int{1, 2, 2}, Padding: []int{1, 0, 1}}},
	}
}

func TestGradientsConv(t *testing.T) {
	var cs []gradCase
	for _, base := range convGeos() {
		for _, tr := range []bool{false, true} {
			c := base
			c.transposed = tr
			if tr {
				c.o.OutputPadding = make([]int, len(c.in))
				for a := range c.in {
					c.o.OutputPadding[a] = perAxis(c.o.Stride, a, 1) - 1
				}
			}
			x, w, y := c.shapes()
			name := fmt.Sprintf("conv%v/w%v/%+v", x, w, c.o)
			if tr {
				name = "transposed/" + name
			}
			if prod(y) == 0 {
				continue
			}
			cs = append(cs, gradCase{name: name, in: [][]int{x, w, {c.cout}},
				op: func(tp *autograd.Tape, v []autograd.Var) autograd.Var {
					if c.transposed {
						return tp.ConvTranspose(v[0], v[1], v[2], c.o)
					}
					return tp.Conv(v[0], v[1], v[2], c.o)
				},
				ref: func(v [][]float64) []float64 { return c.ref(v[0], v[1], v[2]) }})
		}
	}
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range cs {
			t.Run(c.name, func(t *testing.T) { checkGrad(t, d, c) })
		}
	})
}

// TestConvErrors: bad geometry is an error with the sizes in it, never a panic.
func TestConvErrors(t *testing.T) {
	d := ops.CPU()
	tp := autograd.NewTape(d)
	leaf := func(shape ...int) autograd.Var {
		b, err := ops.Zeros(d, prod(shape))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Release() })
		return tp.Leaf(b, shape, true)
	}
	cases := []struct {
		name string
		f    func() autograd.Var
		want string
	}{
		{"stride 0", func() autograd.Var {
			return tp.Conv(leaf(1, 2, 5), leaf(3, 2, 3), autograd.Var{}, autograd.ConvOptions{Stride: []int{0}})
		}, "stride 0"},
		{"channels", func() autograd.Var {
			return tp.Conv(leaf(1, 3, 5), leaf(3, 2, 3), autograd.Var{}, autograd.ConvOptions{})
		}, "input channels"},
		{"groups", func() autograd.Var {
			return tp.Conv(leaf(1, 4, 5), leaf(3, 2, 3), autograd.Var{}, autograd.ConvOptions{Groups: 2})
		}, "groups do not divide"},
		{"rank 9", func() autograd.Var {
			return tp.Conv(leaf(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), leaf(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), autograd.Var{}, autograd.ConvOptions{})
		}, "9 spatial axes"},
		{"2d rank", func() autograd.Var {
			return tp.Conv2d(leaf(1, 2, 5), leaf(3, 2, 3), autograd.Var{}, autograd.ConvOptions{})
		}, "want 2"},
		{"bias", func() autograd.Var { return tp.Conv(leaf(1, 2, 5), leaf(3, 2, 3), leaf(2), autograd.ConvOptions{}) }, "bias [2]"},
		{"output padding", func() autograd.Var {
			return tp.ConvTranspose(leaf(1, 2, 5), leaf(2, 3, 3), autograd.Var{}, autograd.ConvOptions{Stride: []int{2}, OutputPadding: []int{2}})
		}, "output padding 2 on axis 0 not below the stride 2"},
	}
	for _, c := range cases {
		tp.Reset()
		c.f()
		err := tp.Err()
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// torchConv is testdata/torch_conv.json, written by testdata/torch_conv.py with PyTorch 1.13 on
// the CPU in float64 from float32 inputs.
type torchConv struct {
	Torch string
	Cases []struct {
		Name                                     string
		Transposed                               bool
		Batch, Cin, Cout, Groups                 int
		Input, Kernel, Stride, Padding, Dilation []int
		OutputPadding                            []int `json:"output_padding"`
		X, W, B, Dy, Y, Dx, Dw, Db               []float64
		YShape                                   []int `json:"y_shape"`
	}
}

// TestConvAgainstTorch: values and gradients (input, weight, bias) of convolutions and
// transposed convolutions of rank 1 to 3 with strides, padding, dilation and groups match
// PyTorch's within float32 rounding.
func TestConvAgainstTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/torch_conv.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref torchConv
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) < 7 {
		t.Fatalf("%d cases", len(ref.Cases))
	}
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range ref.Cases {
			tp := autograd.NewTape(d)
			wshape := append([]int{c.Cout, c.Cin / c.Groups}, c.Kernel...)
			if c.Transposed {
				wshape = append([]int{c.Cin, c.Cout / c.Groups}, c.Kernel...)
			}
			bx, bw, bb, bdy := upload(t, d, c.X...), upload(t, d, c.W...), upload(t, d, c.B...), upload(t, d, c.Dy...)
			x := tp.Leaf(bx, append([]int{c.Batch, c.Cin}, c.Input...), true)
			w := tp.Leaf(bw, wshape, true)
			b := tp.Leaf(bb, []int{c.Cout}, true)
			o := autograd.ConvOptions{Stride: c.Stride, Padding: c.Padding, Dilation: c.Dilation, Groups: c.Groups}
			var y autograd.Var
			if c.Transposed {
				o.OutputPadding = c.OutputPadding
				y = tp.ConvTranspose(x, w, b, o)
			} else {
				y = tp.Conv(x, w, b, o)
			}
			if err := tp.BackwardWith(y, bdy); err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			if fmt.Sprint(tp.Shape(y)) != fmt.Sprint(c.YShape) {
				t.Errorf("%s: shape %v, PyTorch %v", c.Name, tp.Shape(y), c.YShape)
			}
			for _, q := range []struct {
				what      string
				got, want []float64
			}{{"y", values(t, tp.Value(y)), c.Y}, {"dx", values(t, tp.Grad(x)), c.Dx},
				{"dw", values(t, tp.Grad(w)), c.Dw}, {"db", values(t, tp.Grad(b)), c.Db}} {
				if len(q.got) != len(q.want) {
					t.Fatalf("%s %s: %d values, PyTorch %d", c.Name, q.what, len(q.got), len(q.want))
				}
				for i := range q.want {
					if math.Abs(q.got[i]-q.want[i]) > 2e-5*(1+math.Abs(q.want[i])) {
						t.Errorf("%s %s[%d] = %v, PyTorch %v", c.Name, q.what, i, q.got[i], q.want[i])
						break
					}
				}
			}
			tp.Reset()
			for _, bf := range []*ops.Buffer{bx, bw, bb, bdy} {
				bf.Release()
			}
		}
	})
}

// A 1-D convolution of one sample (the seeds' layout (C, L)) with the kernel [1 1]: each output
// sums two neighbours, and the gradient of the total counts how many windows hold each input.
func ExampleTape_Conv() {
	d := ops.CPU()
	tp := autograd.NewTape(d)
	defer tp.Reset()
	xb, _ := ops.FromFloat32(d, []float32{1, 2, 3})
	wb, _ := ops.FromFloat32(d, []float32{1, 1})
	defer xb.Release()
	defer wb.Release()
	x := tp.Leaf(xb, []int{1, 3}, true)
	w := tp.Leaf(wb, []int{1, 1, 2}, true)
	y := tp.Conv1d(x, w, autograd.Var{}, autograd.ConvOptions{})
	_ = tp.Backward(tp.Sum(y))
	yv, _ := tp.Value(y).Float32s()
	gx, _ := tp.Grad(x).Float32s()
	gw, _ := tp.Grad(w).Float32s()
	fmt.Println(tp.Shape(y), yv, gx, gw)
	// Output: [1 2] [3 5] [1 2 1] [3 5]
}
