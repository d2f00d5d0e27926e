package ops

import (
	"math"
	"strconv"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/internal/testenv"
)

// Seed conventions checked on every device (the mirror test then proves the devices agree).

func TestElementwiseConventions(t *testing.T) {
	nan := float32(math.NaN())
	for _, d := range devices(t) {
		t.Run(d.Kind().String(), func(t *testing.T) {
			x := mustBuf(t, d, []float32{-2, 0, 3, nan})
			g := mustBuf(t, d, []float32{5, 5, 5, 5})
			defer x.Release()
			defer g.Release()

			r, err := AbsBwd(x, g)
			expect(t, "abs_bwd", download(t, r, err), -5, 0, 5, 0)
			r, err = SqrtBwd(x, g)
			expect(t, "sqrt_bwd", download(t, r, err), 0, 0, 5*(1/(2*float32(math.Sqrt(3)))), 0)
			r, err = ReluBwd(x, g)
			expect(t, "relu_bwd", download(t, r, err), 0, 0, 5, 0)
			r, err = Relu(x)
			expect(t, "relu", download(t, r, err), 0, 0, 3, 0)
			r, err = Clamp(x, -2, 3)
			expect(t, "clamp", download(t, r, err), -2, 0, 3, nan)
			r, err = ClampBwd(x, g, -2, 3)
			expect(t, "clamp_bwd", download(t, r, err), 0, 5, 0, 0)

			y := mustBuf(t, d, []float32{-2, 1, 2, 0})
			defer y.Release()
			da, db, err := MaxBwd(x, y, g)
			expect(t, "max_bwd da", download(t, da, err), 2.5, 0, 5, 2.5)
			expect(t, "max_bwd db", download(t, db, nil), 2.5, 5, 0, 2.5)
			da, db, err = MinBwd(x, y, g)
			expect(t, "min_bwd da", download(t, da, err), 2.5, 5, 0, 2.5)
			expect(t, "min_bwd db", download(t, db, nil), 2.5, 0, 5, 2.5)
			r, err = Max(x, y)
			expect(t, "max", download(t, r, err), -2, 1, 3, nan)

			r, err = Axpy(x, g, 0.5)
			expect(t, "axpy", download(t, r, err), 0.5, 2.5, 5.5, nan)
			r, err = Scale(x, -1)
			expect(t, "scale", download(t, r, err), 2, float32(math.Copysign(0, -1)), -3, nan)
			r, err = Exp(x)
			expect(t, "exp", download(t, r, err), float32(math.Exp(-2)), 1, float32(math.Exp(3)), nan)
			r, err = Log(g)
			expect(t, "log", download(t, r, err), float32(math.Log(5)), float32(math.Log(5)), float32(math.Log(5)), float32(math.Log(5)))
			r, err = Sigmoid(x)
			expect(t, "sigmoid", download(t, r, err), float32(1/(1+math.Exp(2))), 0.5, float32(1/(1+math.Exp(-3))), nan)
		})
	}
}

// expect compares within 2 ulp (the transcendental functions are ours, not libm's); NaN
// matches NaN; zeros must match in sign.
func expect(t *testing.T, name string, got []float32, want ...float32) {
	t.Helper()
	for i, w := range want {
		g := got[i]
		switch {
		case w != w:
			if g == g {
				t.Errorf("%s[%d] = %v, want NaN", name, i, g)
			}
		case w == 0:
			if g != 0 || math.Signbit(float64(g)) != math.Signbit(float64(w)) {
				t.Errorf("%s[%d] = %v, want %v", name, i, g, w)
			}
		default:
			d := int64(math.Float32bits(g)) - int64(math.Float32bits(w))
			if d < -2 || d > 2 {
				t.Errorf("%s[%d] = %v, want %v", name, i, g, w)
			}
		}
	}
}

func TestReductionConventions(t *testing.T) {
	for _, d := range devices(t) {
		e := mustBuf(t, d, nil)
		s, err := Sum(e)
		expect(t, "sum([])", download(t, s, err), 0)
		m, err := Mean(e)
		expect(t, "mean([])", download(t, m, err), float32(math.NaN()))
		n := 3*8192 + 17
		v := make([]float32, n)
		for i := range v {
			v[i] = 0.25
		}
		x := mustBuf(t, d, v)
		s, err = Sum(x)
		expect(t, "sum", download(t, s, err), float32(n)*0.25)
		m, err = Mean(x)
		expect(t, "mean", download(t, m, err), 0.25)
		x.Release()
		neg := mustBuf(t, d, []float32{float32(math.Copysign(0, -1))})
		s, err = Sum(neg)
		expect(t, "sum([-0])", download(t, s, err), float32(math.Copysign(0, -1)))
	}
}

// TestRNGVectors checks the element-level test vectors of the reference (key, i) -> value.
func TestRNGVectors(t *testing.T) {
	const key = 0x0123456789abcdef
	want := []float32{0.6428172, 0.7635008, 0.23408191, 0.56710523}
	for _, d := range devices(t) {
		u, err := RandUniform(d, 4, key)
		got := download(t, u, err)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s uniform[%d] = %v, want %v", d, i, got[i], want[i])
			}
		}
		m, err := BernoulliMask(d, 4, 0.6428172, key)
		expect(t, "bernoulli", download(t, m, err), 0, 0, 1, 1)
		n, err := RandNormal(d, 1<<16, 1, 2, 99)
		sample := download(t, n, err)
		var sum, sq float64
		for _, v := range sample {
			sum += float64(v)
			sq += float64(v) * float64(v)
		}
		mean := sum / float64(len(sample))
		std := math.Sqrt(sq/float64(len(sample)) - mean*mean)
		if math.Abs(mean-1) > 0.03 || math.Abs(std-2) > 0.03 {
			t.Errorf("%s normal: mean %v std %v", d, mean, std)
		}
	}
	if KeyOf(42, 1) == KeyOf(43, 0) || KeyOf(1, 2) == KeyOf(2, 1) {
		t.Error("KeyOf collides on (s, c) and (s+1, c-1)")
	}
}

// TestUniformBelowOne checks the fix of the reference's flaw: draws whose low 32 bits round to
// 1.0 map to the largest float32 below 1.
func TestUniformBelowOne(t *testing.T) {
	for _, u := range []uint64{1<<32 - 1, 1<<32 - 128, 1<<32 - 129} {
		if f := cpu.Uniformf(u); !(f < 1) || f < 0.99999 {
			t.Errorf("uniform(%#x) = %v", u, f)
		}
	}
	// Key 101466006 draws such a value at element 1, on every device (the mirror test's key
	// draws none in its 2^20+3 elements).
	for _, d := range devices(t) {
		b, err := RandUniform(d, 2, 101466006)
		if err != nil {
			t.Fatal(err)
		}
		got := download(t, b, nil)
		if math.Float32bits(got[1]) != 0x3f7fffff {
			t.Errorf("%s: uniform element 1 of key 101466006 = %#08x, want 0x3f7fffff (the largest float32 below 1)", d, math.Float32bits(got[1]))
		}
		b.Release()
	}
}

// TestShapeOverflow passes shapes whose element counts overflow int (wrapping to the length of
// the buffer given) and a slice whose end overflows: every op must refuse them, never run.
func TestShapeOverflow(t *testing.T) {
	const big = 1 << (strconv.IntSize / 2) // big*big wraps to 0
	for _, d := range devices(t) {
		e := mustBuf(t, d, nil)
		one := mustBuf(t, d, []float32{1})
		for name, f := range map[string]func() error{
			"softmax":       func() error { _, err := Softmax(e, big, big); return err },
			"transpose2d":   func() error { _, err := Transpose2d(e, big, big); return err },
			"reduce_by_row": func() error { _, err := ReduceSumByRow(e, big, big); return err },
			"layer_norm":    func() error { _, _, _, err := LayerNormFwd(e, one, one, big, big, 1e-6); return err },
			"reduce_axis":   func() error { _, err := ReduceSumAxis(e, []int{big, big}, 0); return err },
			"broadcast_to":  func() error { _, err := BroadcastTo(one, []int{1, 1}, []int{big, big}, []int{0, 1}); return err },
			"gather_rows":   func() error { _, err := GatherRows(e, big, big, []int{0}); return err },
			// An empty matrix of many columns: the result (k, cols) is what overflows.
			"gather_rows k*cols": func() error {
				_, err := GatherRows(e, 0, testenv.Wide(6148914691236517206), []int{0, 1, 2})
				return err
			},
			// The reduced axis is empty: the result (3, big) is what overflows.
			"reduce_axis empty axis": func() error {
				_, err := ReduceSumAxis(e, []int{3, 0, testenv.Wide(6148914691236517206)}, 1)
				return err
			},
			"reduce_axis 2^32 x 2^32": func() error { _, err := ReduceMeanAxis(e, []int{big, 0, big}, 1); return err },
			"swap_adjacent":           func() error { _, err := SwapAdjacentAtDepth(e, []int{big, big, 1}, 0); return err },
			"vec_to_rows":             func() error { _, err := BroadcastVecToRows(one, testenv.Wide(1<<62), 1); return err },
			"vec_to_cols":             func() error { _, err := BroadcastVecToCols(one, 1, testenv.Wide(1<<62)); return err },
			"slice1d":                 func() error { _, err := Slice1d(one, 1, math.MaxInt, 2); return err },
			"zeros 2^62 + 1":          func() error { _, err := Zeros(d, testenv.Wide(1<<62+1)); return err },
		} {
			if err := f(); err == nil {
				t.Errorf("%s on %s: overflowing shape accepted", name, d)
			}
		}
		e.Release()
		one.Release()
	}
}

// TestScalarArguments checks that scalar arguments outside their domain are errors, not silent
// results.
func TestScalarArguments(t *testing.T) {
	d := CPU()
	x := mustBuf(t, d, []float32{1, 2})
	defer x.Release()
	nan := math.NaN()
	for name, f := range map[string]func() (*Buffer, error){
		"bernoulli keep 1.5":    func() (*Buffer, error) { return BernoulliMask(d, 4, 1.5, 1) },
		"bernoulli keep -0.1":   func() (*Buffer, error) { return BernoulliMask(d, 4, -0.1, 1) },
		"bernoulli keep NaN":    func() (*Buffer, error) { return BernoulliMask(d, 4, nan, 1) },
		"normal std -1":         func() (*Buffer, error) { return RandNormal(d, 4, 0, -1, 1) },
		"normal std NaN":        func() (*Buffer, error) { return RandNormal(d, 4, 0, nan, 1) },
		"normal mean Inf":       func() (*Buffer, error) { return RandNormal(d, 4, math.Inf(1), 1, 1) },
		"normal mean 1e39":      func() (*Buffer, error) { return RandNormal(d, 4, 1e39, 1, 1) },
		"normal std 1e39":       func() (*Buffer, error) { return RandNormal(d, 4, 0, 1e39, 1) },
		"safe_log eps -1":       func() (*Buffer, error) { return SafeLog(x, -1) },
		"safe_log eps NaN":      func() (*Buffer, error) { return SafeLog(x, nan) },
		"safe_log_bwd eps 1e39": func() (*Buffer, error) { return SafeLogBwd(x, x, 1e39) },
		"clamp lo NaN":          func() (*Buffer, error) { return Clamp(x, nan, 1) },
		"clamp hi NaN":          func() (*Buffer, error) { return Clamp(x, 0, nan) },
		"clamp_bwd lo NaN":      func() (*Buffer, error) { return ClampBwd(x, x, nan, 1) },
		"layer norm eps -1": func() (*Buffer, error) {
			out, _, _, err := LayerNormFwd(x, x, x, 1, 2, -1)
			return out, err
		},
		"layer norm eps NaN": func() (*Buffer, error) {
			out, _, _, err := LayerNormFwd(x, x, x, 1, 2, nan)
			return out, err
		},
		"layer norm eps Inf": func() (*Buffer, error) {
			out, _, _, err := LayerNormFwd(x, x, x, 1, 2, math.Inf(1))
			return out, err
		},
		"layer norm eps 1e39 (Inf as a float32)": func() (*Buffer, error) {
			out, _, _, err := LayerNormFwd(x, x, x, 1, 2, 1e39)
			return out, err
		},
	} {
		if b, err := f(); err == nil {
			b.Release()
			t.Errorf("%s: no error", name)
		}
	}
	for _, keep := range []float64{0, 1} {
		b, err := BernoulliMask(d, 4, keep, 1)
		got := download(t, b, err)
		for _, v := range got {
			if v != float32(keep) {
				t.Errorf("keep %v: %v", keep, got)
			}
		}
	}
}
