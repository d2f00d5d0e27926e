package ops

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
)

// TestSelectiveScanReference: the selective-scan vectors of the reference suite (section 5.1 of
// the runtime reference): constant coefficients forward and backward with dY = 1 (every value
// dyadic, so exact), the time-varying forward (within 1e-5: 0.1 and 0.2 are not dyadic) and its
// backward for a non-uniform cotangent against a float64 evaluation of the same formulas.
func TestSelectiveScanReference(t *testing.T) {
	for _, d := range devices(t) {
		buf := func(v ...float32) *Buffer { return mustBuf(t, d, v) }
		a, b, h0 := buf(0.5, 0.25), buf(1, 2), buf(1, -1)
		x := buf(2, 1, 4, -2, 0, 3)
		defer ReleaseThen(nil, a, b, h0, x)
		out, err := SelectiveScanDiagFwd(a, b, x, h0, 3, 2)
		h := scanPeek(t, out, err)
		defer out.Release()
		exact := func(name string, got, want []float32) {
			t.Helper()
			if !slices.Equal(got, want) {
				t.Errorf("%s on %s = %v, want %v", name, d, got, want)
			}
		}
		exact("h", h, []float32{2.5, 1.75, 5.25, -3.5625, 2.625, 5.109375})
		ones := buf(1, 1, 1, 1, 1, 1)
		defer ones.Release()
		dA, dB, dX, dH0, err := SelectiveScanDiagBwd(a, b, x, h0, out, ones, 3, 2)
		if err != nil {
			t.Fatal(err)
		}
		defer ReleaseThen(nil, dA, dB, dX, dH0)
		exact("dA", download(t, dA, nil), []float32{10.75, -2.6875})
		exact("dB", download(t, dB, nil), []float32{9.5, 1.8125})
		exact("dX", download(t, dX, nil), []float32{1.75, 2.625, 1.5, 2.5, 1, 2})
		exact("dH0", download(t, dH0, nil), []float32{0.875, 0.328125})

		av := []float32{0.5, 0.25, 0.1, 0.75, -1, 0.2}
		bv := []float32{1, 2, 0.5, -1, 0.25, 0.5}
		xv := []float32{2, 1, 4, -2, 0, 3}
		dyv := []float32{1, -2, 3, 4, -1, 0.5}
		A, B, dy := buf(av...), buf(bv...), buf(dyv...)
		defer ReleaseThen(nil, A, B, dy)
		outV, err := SelectiveScanDiagVarFwd(A, B, x, h0, 3, 2)
		hv := scanPeek(t, outV, err)
		defer outV.Release()
		near := func(name string, got []float32, want []float64) {
			t.Helper()
			for i := range want {
				if len(got) != len(want) || !(math.Abs(float64(got[i])-want[i]) <= 1e-5) {
					t.Errorf("%s on %s = %v, want %v", name, d, got, want)
					return
				}
			}
		}
		near("var h", hv, []float64{2.5, 1.75, 2.25, 3.3125, -2.25, 2.1625})
		// float64 reference of the time-varying backward.
		f := func(v []float32) []float64 {
			o := make([]float64, len(v))
			for i, e := range v {
				o[i] = float64(e)
			}
			return o
		}
		a64, b64, x64, dy64 := f(av), f(bv), f(xv), f(dyv)
		hs := make([]float64, 6)
		for j := range 2 {
			prev := []float64{1, -1}[j]
			for tt := range 3 {
				i := tt*2 + j
				hs[i] = a64[i]*prev + b64[i]*x64[i]
				prev = hs[i]
			}
		}
		wdA, wdB, wdX, wdH0 := make([]float64, 6), make([]float64, 6), make([]float64, 6), make([]float64, 2)
		for j := range 2 {
			g := 0.0
			for tt := 2; tt >= 0; tt-- {
				i := tt*2 + j
				total := dy64[i] + g
				prev := []float64{1, -1}[j]
				if tt > 0 {
					prev = hs[i-2]
				}
				wdA[i], wdB[i], wdX[i] = total*prev, total*x64[i], total*b64[i]
				g = total * a64[i]
			}
			wdH0[j] = g
		}
		vA, vB, vX, vH0, err := SelectiveScanDiagVarBwd(A, B, x, h0, outV, dy, 3, 2)
		if err != nil {
			t.Fatal(err)
		}
		defer ReleaseThen(nil, vA, vB, vX, vH0)
		near("var dA", download(t, vA, nil), wdA)
		near("var dB", download(t, vB, nil), wdB)
		near("var dX", download(t, vX, nil), wdX)
		near("var dH0", download(t, vH0, nil), wdH0)

		// Empty sequence and empty state (the reference's "empty seq/state").
		empty := buf()
		defer empty.Release()
		if y, err := SelectiveScanDiagFwd(a, b, empty, h0, 0, 2); err != nil || y.Len() != 0 {
			t.Errorf("seqLen 0: %v, %v", y, err)
		} else {
			y.Release()
		}
		if y, err := SelectiveScanDiagFwd(empty, empty, empty, empty, 3, 0); err != nil || y.Len() != 0 {
			t.Errorf("state 0: %v, %v", y, err)
		} else {
			y.Release()
		}
		ea, eb, ex, eh, err := SelectiveScanDiagBwd(a, b, empty, h0, empty, empty, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		exact("empty dA", download(t, ea, nil), []float32{0, 0})
		exact("empty dB", download(t, eb, nil), []float32{0, 0})
		exact("empty dH0", download(t, eh, nil), []float32{0, 0})
		if ex.Len() != 0 {
			t.Errorf("empty dX has %d elements", ex.Len())
		}
		ReleaseThen(nil, ea, eb, ex, eh)
	}
}

// scanInputs are deterministic scan operands: coefficients with |A| below, near and above 1
// (channel j mod 4: decaying in (0.5, 0.95), just below 1, just above 1, near -1), B in (-2, 2),
// x, h0 and dY in (-1, 1). varying gives A and B per (batch, t, state).
func scanInputs(batch, seqLen, state int, varying bool, seed uint64) (a, b, x, h0, dy []float32) {
	n := batch * seqLen * state
	u := func(k uint64, i int) float32 { // uniform in [0, 1)
		return float32(cpu.SplitMix64(seed^k<<48^uint64(i))>>40) * 0x1p-24
	}
	coef := state
	if varying {
		coef = n
	}
	a, b = make([]float32, coef), make([]float32, coef)
	for i := range a {
		switch i % state % 4 {
		case 0:
			a[i] = 0.5 + 0.45*u(1, i)
		case 1:
			a[i] = 1 - 0x1p-10*u(1, i)
		case 2:
			a[i] = 1 + 0x1p-7*u(1, i)
		default:
			a[i] = -0.98 - 0.03*u(1, i)
		}
		b[i] = 4*u(2, i) - 2
	}
	x, dy, h0 = make([]float32, n), make([]float32, n), make([]float32, batch*state)
	for i := range x {
		x[i], dy[i] = 2*u(3, i)-1, 2*u(4, i)-1
	}
	for i := range h0 {
		h0[i] = 2*u(5, i) - 1
	}
	return
}

// scanNaive is the doc comments' arithmetic of the forwards and backwards, one channel at a
// time (no loop reordering): what the twins must equal bit for bit.
func scanNaive(varying bool, a, b, x, h0, dy []float32, batch, seqLen, state int) (out, dA, dB, dX, dH0 []float32) {
	n := batch * seqLen * state
	out, dX, dH0 = make([]float32, n), make([]float32, n), make([]float32, batch*state)
	if varying {
		dA, dB = make([]float32, n), make([]float32, n)
	} else {
		dA, dB = make([]float32, state), make([]float32, state)
	}
	pa, pb := make([]float32, batch*state), make([]float32, batch*state)
	for c := range batch * state {
		bi, j := c/state, c%state
		ci := func(t int) int { // the coefficient index
			if varying {
				return (bi*seqLen+t)*state + j
			}
			return j
		}
		h := h0[c]
		for t := range seqLen {
			i := (bi*seqLen+t)*state + j
			h = float32(a[ci(t)]*h) + float32(b[ci(t)]*x[i]) // float32(): no fused multiply-add
			out[i] = h
		}
		var g float32
		for t := seqLen - 1; t >= 0; t-- {
			i := (bi*seqLen+t)*state + j
			prev := h0[c]
			if t > 0 {
				prev = out[i-state]
			}
			total := dy[i] + g
			ua, ub := float32(total*prev), float32(total*x[i])
			if varying {
				dA[i], dB[i] = ua, ub
			} else {
				pa[c] += ua
				pb[c] += ub
			}
			dX[i] = float32(total * b[ci(t)])
			g = float32(total * a[ci(t)])
		}
		dH0[c] = g
	}
	if !varying && batch > 0 {
		for j := range state {
			dA[j], dB[j] = pa[j], pb[j]
			for bi := 1; bi < batch; bi++ {
				dA[j] += pa[bi*state+j]
				dB[j] += pb[bi*state+j]
			}
		}
	}
	return
}

// TestSelectiveScanNaive: the ops (the twins, split over goroutines, and the GPU when present)
// equal the per-channel arithmetic of the doc comments bit for bit, for both forms, batched.
func TestSelectiveScanNaive(t *testing.T) {
	for _, d := range devices(t) {
		for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 7}, {2, 65, 33}, {3, 300, 40}, {1, 2000, 3}, {2, 0, 4}, {0, 4, 3}} {
			batch, seqLen, state := sh[0], sh[1], sh[2]
			for _, varying := range []bool{false, true} {
				name := fmt.Sprintf("%s %v var=%v", d, sh, varying)
				a, b, x, h0, dy := scanInputs(batch, seqLen, state, varying, 7)
				wOut, wA, wB, wX, wH0 := scanNaive(varying, a, b, x, h0, dy, batch, seqLen, state)
				A, B, X, H0, DY := mustBuf(t, d, a), mustBuf(t, d, b), mustBuf(t, d, x), mustBuf(t, d, h0), mustBuf(t, d, dy)
				fwd, bwd := SelectiveScanDiagBatchedFwd, SelectiveScanDiagBatchedBwd
				if varying {
					fwd, bwd = SelectiveScanDiagVarBatchedFwd, SelectiveScanDiagVarBatchedBwd
				}
				out, err := fwd(A, B, X, H0, batch, seqLen, state)
				if err != nil {
					t.Fatal(name, err)
				}
				gA, gB, gX, gH0, err := bwd(A, B, X, H0, out, DY, batch, seqLen, state)
				if err != nil {
					t.Fatal(name, err)
				}
				for k, p := range []struct {
					got  *Buffer
					want []float32
				}{{out, wOut}, {gA, wA}, {gB, wB}, {gX, wX}, {gH0, wH0}} {
					if got := download(t, p.got, nil); !slices.Equal(canonical(got), canonical(p.want)) {
						t.Errorf("%s: output %d differs from the per-channel arithmetic", name, k)
					}
				}
				ReleaseThen(nil, A, B, X, H0, DY, out, gA, gB, gX, gH0)
			}
		}
	}
}

// TestSelectiveScanBatchInvariant: a sample's states and its input gradients do not depend on
// the batch it is in.
func TestSelectiveScanBatchInvariant(t *testing.T) {
	const batch, seqLen, state = 3, 129, 17
	a, b, x, h0, _ := scanInputs(batch, seqLen, state, false, 3)
	A, B, X, H0 := mustBuf(t, CPU(), a), mustBuf(t, CPU(), b), mustBuf(t, CPU(), x), mustBuf(t, CPU(), h0)
	defer ReleaseThen(nil, A, B, X, H0)
	y, err := SelectiveScanDiagBatchedFwd(A, B, X, H0, batch, seqLen, state)
	all := download(t, y, err)
	defer y.Release()
	for s := range batch {
		Xs := mustBuf(t, CPU(), x[s*seqLen*state:(s+1)*seqLen*state])
		Hs := mustBuf(t, CPU(), h0[s*state:(s+1)*state])
		ys, err := SelectiveScanDiagFwd(A, B, Xs, Hs, seqLen, state)
		if one := download(t, ys, err); !slices.Equal(one, all[s*seqLen*state:(s+1)*seqLen*state]) {
			t.Errorf("sample %d: batched states differ from the sample's own", s)
		}
		ReleaseThen(nil, Xs, Hs, ys)
	}
}

func TestSelectiveScanErrors(t *testing.T) {
	d := CPU()
	two, six, five := mustBuf(t, d, make([]float32, 2)), mustBuf(t, d, make([]float32, 6)), mustBuf(t, d, make([]float32, 5))
	defer ReleaseThen(nil, two, six, five)
	for _, c := range []struct {
		want string
		err  error
	}{
		{"X (batch, seqLen, state) has 5 elements, want 6", scanErr(SelectiveScanDiagFwd(two, two, five, two, 3, 2))},
		{"A (state) has 6 elements, want 2", scanErr(SelectiveScanDiagFwd(six, two, six, two, 3, 2))},
		{"A (batch, seqLen, state) has 2 elements, want 6", scanErr(SelectiveScanDiagVarFwd(two, six, six, two, 3, 2))},
		{"h0 (batch, state) has 2 elements, want 6", scanErr(SelectiveScanDiagBatchedFwd(two, two, six, two, 3, 1, 2))},
		{"negative size", scanErr(SelectiveScanDiagFwd(two, two, six, two, -3, 2))},
		{"dY (batch, seqLen, state) has 5 elements", scanErr4(SelectiveScanDiagBwd(two, two, six, two, six, five, 3, 2))},
		{"out (batch, seqLen, state) has 5 elements", scanErr4(SelectiveScanDiagVarBwd(six, six, six, two, five, six, 3, 2))},
		{"overflows", scanErr(SelectiveScanDiagFwd(two, two, six, two, math.MaxInt/2, 4))},
		{"B (state) is nil", scanErr(SelectiveScanDiagFwd(two, nil, six, two, 3, 2))},
	} {
		if c.err == nil || !strings.HasPrefix(c.err.Error(), "ops: selective_scan_diag") || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", c.err, c.want)
		}
	}
}

// scanPeek downloads b without releasing it.
func scanPeek(t *testing.T, b *Buffer, err error) []float32 {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	f, err := b.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func scanErr(_ *Buffer, err error) error { return err }

func scanErr4(a, b, c, d *Buffer, err error) error {
	ReleaseThen(nil, a, b, c, d)
	return err
}

// ExampleSelectiveScanDiagFwd runs the reference suite's scan: two channels, three steps.
func ExampleSelectiveScanDiagFwd() {
	d := CPU()
	a, _ := FromFloat32(d, []float32{0.5, 0.25}) // A: one decay per channel
	b, _ := FromFloat32(d, []float32{1, 2})
	h0, _ := FromFloat32(d, []float32{1, -1})
	x, _ := FromFloat32(d, []float32{2, 1, 4, -2, 0, 3}) // (seqLen 3, state 2)
	h, _ := SelectiveScanDiagFwd(a, b, x, h0, 3, 2)      // h[t] = A*h[t-1] + B*x[t]
	fmt.Println(h.Float32s())
	dY, _ := FromFloat32(d, []float32{1, 1, 1, 1, 1, 1})
	dA, dB, dX, dH0, _ := SelectiveScanDiagBwd(a, b, x, h0, h, dY, 3, 2)
	for _, g := range []*Buffer{dA, dB, dX, dH0} {
		v, _ := g.Float32s()
		fmt.Println(v)
	}
	ReleaseThen(nil, a, b, h0, x, h, dY, dA, dB, dX, dH0)
	// Output:
	// [2.5 1.75 5.25 -3.5625 2.625 5.109375] <nil>
	// [10.75 -2.6875]
	// [9.5 1.8125]
	// [1.75 2.625 1.5 2.5 1 2]
	// [0.875 0.328125]
}

// ExampleSelectiveScanDiagVarBatchedFwd: a batch of two sequences with per-token coefficients;
// with A = 1 and B = 1 the states are running sums of x.
func ExampleSelectiveScanDiagVarBatchedFwd() {
	d := CPU()
	ones, _ := Full(d, 2*3*1, 1)
	x, _ := FromFloat32(d, []float32{1, 2, 3, 10, 20, 30}) // (batch 2, seqLen 3, state 1)
	h0, _ := FromFloat32(d, []float32{0, 100})
	h, _ := SelectiveScanDiagVarBatchedFwd(ones, ones, x, h0, 2, 3, 1)
	v, _ := h.Float32s()
	fmt.Println(v)
	ReleaseThen(nil, ones, x, h0, h)
	// Output: [1 3 6 110 130 160]
}

// BenchmarkSelectiveScan: forward and backward of both forms on the default device. The issue's
// shape is (8, 1024, 1024 channels x 16 states); on the CPU it is reduced to 64 channels x 16
// states (1024 states: 32 MiB per operand), the full one's 512 MiB operands being too large for
// a 2-core machine shared with other work.
func BenchmarkSelectiveScan(b *testing.B) {
	d := Default()
	batch, seqLen, state := 8, 1024, 1024*16
	if d == CPU() {
		state = 64 * 16
	}
	for _, varying := range []bool{false, true} {
		av, bv, xv, hv, dyv := scanInputs(batch, seqLen, state, varying, 1)
		A, B, X, H0, DY := mustBufB(b, d, av), mustBufB(b, d, bv), mustBufB(b, d, xv), mustBufB(b, d, hv), mustBufB(b, d, dyv)
		fwd, bwd := SelectiveScanDiagBatchedFwd, SelectiveScanDiagBatchedBwd
		tag := "const"
		if varying {
			fwd, bwd, tag = SelectiveScanDiagVarBatchedFwd, SelectiveScanDiagVarBatchedBwd, "var"
		}
		out, err := fwd(A, B, X, H0, batch, seqLen, state)
		if err != nil {
			b.Fatal(err)
		}
		n := int64(batch * seqLen * state)
		ins := int64(2) // x in, h out
		if varying {
			ins = 4
		}
		b.Run(fmt.Sprintf("fwd/%s/%dx%dx%d", tag, batch, seqLen, state), func(b *testing.B) {
			b.SetBytes(4 * n * ins)
			for b.Loop() {
				y, err := fwd(A, B, X, H0, batch, seqLen, state)
				if err == nil {
					err = d.Sync()
				}
				if err != nil {
					b.Fatal(err)
				}
				y.Release()
			}
		})
		b.Run(fmt.Sprintf("bwd/%s/%dx%dx%d", tag, batch, seqLen, state), func(b *testing.B) {
			b.SetBytes(4 * n * 2 * ins) // also out and dY in; dX (and dA, dB when varying) out
			for b.Loop() {
				gA, gB, gX, gH, err := bwd(A, B, X, H0, out, DY, batch, seqLen, state)
				if err == nil {
					err = d.Sync()
				}
				if err != nil {
					b.Fatal(err)
				}
				ReleaseThen(nil, gA, gB, gX, gH)
			}
		})
		ReleaseThen(nil, A, B, X, H0, DY, out)
	}
}
