package ops_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ops"
)

// takeFloats downloads b and releases it.
func takeFloats(t *testing.T, b *ops.Buffer) []float32 {
	t.Helper()
	v, err := b.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	return v
}

// TestPowScalarSemantics checks PyTorch's special exponents, C's special cases, the gradient's
// zero exponent and the rounding of p - 1 in float64.
func TestPowScalarSemantics(t *testing.T) {
	d := ops.CPU()
	negZero, inf, nan := float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN())
	x, _ := ops.FromFloat32(d, []float32{-8, -1, negZero, 0, 2, inf, -inf, nan, 1})
	defer x.Release()
	for _, c := range []struct {
		p    float64
		want string
	}{
		{0, "[1 1 1 1 1 1 1 1 1]"},
		{1, "[-8 -1 -0 0 2 +Inf -Inf NaN 1]"},
		{0.5, "[NaN NaN -0 0 1.4142135 +Inf NaN NaN 1]"}, // sqrt: -0 and NaN at -Inf
		{2, "[64 1 0 0 4 +Inf +Inf NaN 1]"},
		{3, "[-512 -1 -0 0 8 +Inf -Inf NaN 1]"},
		{-1, "[-0.125 -1 -Inf +Inf 0.5 0 -0 NaN 1]"},
		{-2, "[0.015625 1 +Inf +Inf 0.25 0 0 NaN 1]"},
		{1.0 / 3, "[NaN NaN 0 0 1.2599211 +Inf +Inf NaN 1]"}, // C: a negative base needs an integer
		{-3, "[-0.001953125 -1 -Inf +Inf 0.125 0 -0 NaN 1]"},
		{math.Inf(1), "[+Inf 1 0 0 +Inf +Inf +Inf NaN 1]"},
	} {
		y, err := ops.PowScalar(x, c.p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(takeFloats(t, y)); got != c.want {
			t.Errorf("PowScalar(x, %g) = %s, want %s", c.p, got, c.want)
		}
	}
	g, _ := ops.Full(d, 9, 1)
	defer g.Release()
	z, err := ops.PowBwd(x, g, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(takeFloats(t, z)); got != "[0 0 0 0 0 0 0 0 0]" {
		t.Errorf("PowBwd(x, 1, 0) = %s, want zeros (PyTorch: zeros_like)", got)
	}
	// p = 0.1 + 2^-30: float32(p) - 1 and float32(p - 1) differ; PyTorch takes the second.
	p := 0.1 + 0x1p-30
	two, _ := ops.FromFloat32(d, []float32{2})
	defer two.Release()
	one, _ := ops.Full(d, 1, 1)
	defer one.Release()
	dx, err := ops.PowBwd(two, one, p)
	if err != nil {
		t.Fatal(err)
	}
	want := float32(p) * cpu.Powf(2, float32(p-1))
	if got := takeFloats(t, dx)[0]; got != want {
		t.Errorf("PowBwd(2, 1, %g) = %g, want %g", p, got, want)
	}
}

// TestWhereSemantics: NaN is true, -0 false; bits are copied; the gradient selects.
func TestWhereSemantics(t *testing.T) {
	d := ops.CPU()
	c, _ := ops.FromFloat32(d, []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), 1e-45, -3})
	a, _ := ops.FromFloat32(d, []float32{1, 2, 3, 4, 5})
	b, _ := ops.FromFloat32(d, []float32{-1, -2, -3, -4, float32(math.Inf(-1))})
	defer c.Release()
	defer a.Release()
	defer b.Release()
	y, err := ops.Where(c, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(takeFloats(t, y)); got != "[-1 -2 3 4 5]" {
		t.Errorf("Where = %s", got)
	}
	da, db, err := ops.WhereBwd(c, b)
	if err != nil {
		t.Fatal(err)
	}
	if ga, gb := fmt.Sprint(takeFloats(t, da)), fmt.Sprint(takeFloats(t, db)); ga != "[0 0 -3 -4 -Inf]" || gb != "[-1 -2 0 0 0]" {
		t.Errorf("WhereBwd = %s, %s", ga, gb)
	}
	m, err := ops.MaskedFill(a, c, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(takeFloats(t, m)); got != "[1 2 0.1 0.1 0.1]" {
		t.Errorf("MaskedFill = %s", got)
	}
	short, _ := ops.Zeros(d, 4)
	defer short.Release()
	if _, err := ops.Where(c, a, short); err == nil || !strings.HasPrefix(err.Error(), "ops: where") {
		t.Errorf("Where of unequal lengths: %v", err)
	}
}

// TestCumsumRows: the ascending chain of float32 additions, the descending one for the
// gradient, and the shape checks.
func TestCumsumRows(t *testing.T) {
	d := ops.CPU()
	x, _ := ops.FromFloat32(d, []float32{1, 0x1p-24, 0x1p-24, float32(math.Copysign(0, -1)), 1, float32(math.Inf(1))})
	defer x.Release()
	y, err := ops.CumsumRows(x, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(takeFloats(t, y)); got != "[1 1 1 -0 1 +Inf]" {
		t.Errorf("CumsumRows = %s", got)
	}
	g, err := ops.CumsumRowsBwd(x, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(takeFloats(t, g)); got != "[1.0000001 1.1920929e-07 5.9604645e-08 +Inf +Inf +Inf]" {
		t.Errorf("CumsumRowsBwd = %s", got)
	}
	for _, sh := range [][2]int{{4, 2}, {-1, 3}, {math.MaxInt/2 + 1, 4}} {
		if _, err := ops.CumsumRows(x, sh[0], sh[1]); err == nil || !strings.HasPrefix(err.Error(), "ops: cumsum_rows:") {
			t.Errorf("CumsumRows(x, %d, %d): %v", sh[0], sh[1], err)
		}
	}
}

func ExamplePowScalar() {
	x, _ := ops.FromFloat32(ops.CPU(), []float32{-2, 0.25, 4, 10})
	defer x.Release()
	y, _ := ops.PowScalar(x, 1.5)
	defer y.Release()
	v, _ := y.Float32s()
	fmt.Println(v)
	// Output: [NaN 0.125 8 31.622776]
}

func ExampleWhere() {
	d := ops.CPU()
	c, _ := ops.FromFloat32(d, []float32{1, 0, float32(math.NaN())})
	a, _ := ops.FromFloat32(d, []float32{1, 2, 3})
	b, _ := ops.FromFloat32(d, []float32{-1, -2, -3})
	y, _ := ops.Where(c, a, b)
	v, _ := y.Float32s()
	fmt.Println(v)
	for _, buf := range []*ops.Buffer{c, a, b, y} {
		buf.Release()
	}
	// Output: [1 -2 3]
}

func ExampleMaskedFill() {
	d := ops.CPU()
	x, _ := ops.FromFloat32(d, []float32{0.5, 1.5, 2.5})
	m, _ := ops.FromFloat32(d, []float32{0, 1, 0})
	y, _ := ops.MaskedFill(x, m, math.Inf(-1))
	v, _ := y.Float32s()
	fmt.Println(v)
	for _, buf := range []*ops.Buffer{x, m, y} {
		buf.Release()
	}
	// Output: [0.5 -Inf 2.5]
}

func ExampleCumsumRows() {
	x, _ := ops.FromFloat32(ops.CPU(), []float32{1, 2, 3, 4, 5, 6})
	defer x.Release()
	y, _ := ops.CumsumRows(x, 2, 3) // two rows of three
	defer y.Release()
	v, _ := y.Float32s()
	fmt.Println(v)
	// Output: [1 3 6 4 9 15]
}
