package ops

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/internal/testenv"
)

// attnValues returns n values in (-amp, amp), keyed by k.
func attnValues(n, k int, amp float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		z := cpu.SplitMix64(uint64(k)<<40 ^ uint64(i) ^ 0xa77e)
		x[i] = amp * (float32(int32(z>>32)) * 0x1p-31)
	}
	return x
}

// attnMaskValues returns a 0/1 mask of n values (about keep of them 1); rows listed in blocked
// (of length cols) are all 0.
func attnMaskValues(n, cols int, keep float64, blocked ...int) []float32 {
	m := make([]float32, n)
	for i := range m {
		if float64(cpu.SplitMix64(uint64(i)^0x3a5c)>>11)*0x1p-53 < keep {
			m[i] = 1
		}
	}
	for _, r := range blocked {
		if (r+1)*cols <= n {
			clear(m[r*cols : (r+1)*cols])
		}
	}
	return m
}

// attnRef is the float64 reference of FlashAttention and its gradients for the cotangent g
// (nil: no gradients): the formulas of cpu/attention.go's comment without the blocking.
func attnRef(q, k, v, mask, g []float32, dims AttentionDims, scale float64, hard, causal bool) (out, dq, dk, dv []float64) {
	b, nq, nk, d := dims.Batch, dims.NQ, dims.NK, dims.D
	out, dq = make([]float64, b*nq*d), make([]float64, b*nq*d)
	dk, dv = make([]float64, b*nk*d), make([]float64, b*nk*d)
	s, p := make([]float64, nk), make([]float64, nk)
	st := make([]int, nk)
	for bb := range b {
		for i := range nq {
			m := math.Inf(-1)
			for j := range nk {
				st[j] = 0
				if causal && j > i {
					st[j] = 2
				} else if mask != nil {
					mi := i*nk + j
					if len(mask) == b*nq*nk {
						mi += bb * nq * nk
					}
					if mask[mi] == 0 {
						st[j] = 1
						if hard {
							st[j] = 2
						}
					}
				}
				switch st[j] {
				case 0:
					dot := 0.0
					for c := range d {
						dot += float64(q[(bb*nq+i)*d+c]) * float64(k[(bb*nk+j)*d+c])
					}
					s[j] = dot * float64(float32(scale))
				case 1:
					s[j] = -1000
				}
				if st[j] != 2 {
					m = math.Max(m, s[j])
				}
			}
			z := 0.0
			for j := range nk {
				p[j] = 0
				if st[j] != 2 {
					p[j] = math.Exp(s[j] - m)
					z += p[j]
				}
			}
			if z == 0 {
				continue
			}
			oi := out[(bb*nq+i)*d : (bb*nq+i+1)*d]
			for j := range nk {
				p[j] /= z
				for c := range d {
					oi[c] += p[j] * float64(v[(bb*nk+j)*d+c])
				}
			}
			if g == nil {
				continue
			}
			gi := g[(bb*nq+i)*d : (bb*nq+i+1)*d]
			dd := 0.0
			for c := range d {
				dd += float64(gi[c]) * oi[c]
			}
			for j := range nk {
				if st[j] == 2 {
					continue
				}
				dp := 0.0
				for c := range d {
					dv[(bb*nk+j)*d+c] += p[j] * float64(gi[c])
					dp += float64(gi[c]) * float64(v[(bb*nk+j)*d+c])
				}
				if st[j] != 0 {
					continue
				}
				ds := p[j] * (dp - dd) * float64(float32(scale))
				for c := range d {
					dq[(bb*nq+i)*d+c] += ds * float64(k[(bb*nk+j)*d+c])
					dk[(bb*nk+j)*d+c] += ds * float64(q[(bb*nq+i)*d+c])
				}
			}
		}
	}
	return out, dq, dk, dv
}

// attnClose fails t when got is not within tol·(1 + max|want|) of want, element by element.
func attnClose(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range got {
		if e := math.Abs(float64(got[i]) - want[i]); !(e <= tol*scale) {
			t.Fatalf("%s[%d] = %v, want %v (error %.3g, tolerance %.3g)", what, i, got[i], want[i], e, tol*scale)
		}
	}
}

// TestFlashAttentionReference checks the forward and the three gradients against the float64
// reference for every mask mode, shared and per-sequence masks, fully blocked rows, causal,
// nq != nk and head dims across the three tile classes, on every device.
func TestFlashAttentionReference(t *testing.T) {
	for _, dev := range devices(t) {
		for _, c := range []struct {
			dims          AttentionDims
			mask          string // "", "shared", "batch"
			hard, causal  bool
			blockedRows   []int
			maskKeep      float64
			scaleOverride float64
		}{
			{dims: AttentionDims{2, 5, 5, 3}},
			{dims: AttentionDims{3, 70, 70, 16}, mask: "batch", blockedRows: []int{2, 69}, maskKeep: 0.7},
			{dims: AttentionDims{3, 70, 70, 16}, mask: "batch", hard: true, blockedRows: []int{2, 69}, maskKeep: 0.7},
			{dims: AttentionDims{2, 65, 65, 63}, causal: true},
			{dims: AttentionDims{2, 33, 130, 100}, mask: "shared", hard: true, causal: true, blockedRows: []int{5}, maskKeep: 0.5},
			{dims: AttentionDims{1, 40, 17, 200}, mask: "shared", maskKeep: 0.6, blockedRows: []int{0}},
			{dims: AttentionDims{2, 20, 0, 8}},
			{dims: AttentionDims{1, 1, 1, 1}, scaleOverride: 2},
		} {
			name := fmt.Sprintf("%s/%+v/%s/hard=%v/causal=%v", dev, c.dims, c.mask, c.hard, c.causal)
			b, nq, nk, d := c.dims.Batch, c.dims.NQ, c.dims.NK, c.dims.D
			q, k, v := attnValues(b*nq*d, 1, 2), attnValues(b*nk*d, 2, 2), attnValues(b*nk*d, 3, 1)
			g := attnValues(b*nq*d, 4, 1)
			var mask []float32
			switch c.mask {
			case "shared":
				mask = attnMaskValues(nq*nk, nk, c.maskKeep, c.blockedRows...)
			case "batch":
				mask = attnMaskValues(b*nq*nk, nk, c.maskKeep, c.blockedRows...)
			}
			scale := AttentionScale(d)
			if c.scaleOverride != 0 {
				scale = c.scaleOverride
			}
			qb, kb, vb, gb := mustBuf(t, dev, q), mustBuf(t, dev, k), mustBuf(t, dev, v), mustBuf(t, dev, g)
			o := AttentionOptions{HardMask: c.hard, Causal: c.causal}
			if mask != nil {
				o.Mask = mustBuf(t, dev, mask)
			}
			out, lse, err := FlashAttention(qb, kb, vb, c.dims, scale, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			dq, dk, dv, err := FlashAttentionBackward(qb, kb, vb, out, lse, gb, c.dims, scale, o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			wo, wq, wk, wv := attnRef(q, k, v, mask, g, c.dims, scale, c.hard, c.causal)
			got, gq := download(t, out, nil), download(t, dq, nil)
			attnClose(t, name+" out", got, wo, 2e-6)
			attnClose(t, name+" dq", gq, wq, 1e-5)
			attnClose(t, name+" dk", download(t, dk, nil), wk, 1e-5)
			attnClose(t, name+" dv", download(t, dv, nil), wv, 1e-5)
			if c.hard {
				// Fully blocked rows: zero output and zero gradient, exactly.
				// (Row r of sequence 0.)
				for _, r := range c.blockedRows {
					row := got[r*d : (r+1)*d]
					if slices.ContainsFunc(row, func(x float32) bool { return x != 0 }) || slices.ContainsFunc(gq[r*d:(r+1)*d], func(x float32) bool { return x != 0 }) {
						t.Errorf("%s: fully blocked row %d: out %v, dq %v", name, r, row, gq[r*d:(r+1)*d])
					}
				}
			}
			releaseAll([]*Buffer{qb, kb, vb, gb, out, lse, dq, dk, dv, o.Mask})
		}
	}
}

// TestFlashAttentionSeeds checks the seeds' entry points against FlashAttention and
// FlashAttentionBackward bit for bit, the -1000.0 fill against a score matrix filled by hand
// (a fully blocked row averages V), and the errors.
func TestFlashAttentionSeeds(t *testing.T) {
	dev := CPU()
	const b, n, d = 2, 9, 4
	q, k, v, g := attnValues(b*n*d, 1, 1), attnValues(b*n*d, 2, 1), attnValues(b*n*d, 3, 1), attnValues(b*n*d, 4, 1)
	mask := attnMaskValues(b*n*n, n, 0.6, 3)
	qb, kb, vb, gb, mb := mustBuf(t, dev, q), mustBuf(t, dev, k), mustBuf(t, dev, v), mustBuf(t, dev, g), mustBuf(t, dev, mask)
	defer releaseAll([]*Buffer{qb, kb, vb, gb, mb})
	scale := AttentionScale(d)
	dims := AttentionDims{b, n, n, d}
	o := AttentionOptions{Mask: mb}
	out, lse, err := FlashAttention(qb, kb, vb, dims, scale, o)
	if err != nil {
		t.Fatal(err)
	}
	dq, dk, dv, err := FlashAttentionBackward(qb, kb, vb, out, lse, gb, dims, scale, o)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{download(t, out, nil), download(t, dq, nil), download(t, dk, nil), download(t, dv, nil)}
	releaseAll([]*Buffer{out, lse, dq, dk, dv})
	seedOut, err := FlashAttentionFwd(qb, kb, vb, mb, true, b, n, d, scale)
	sq, err2 := FlashAttentionBwdQ(qb, kb, vb, mb, gb, true, b, n, d, scale)
	sk, err3 := FlashAttentionBwdK(qb, kb, vb, mb, gb, true, b, n, d, scale)
	sv, err4 := FlashAttentionBwdV(qb, kb, vb, mb, gb, true, b, n, d, scale)
	for i, r := range []struct {
		b   *Buffer
		err error
	}{{seedOut, err}, {sq, err2}, {sk, err3}, {sv, err4}} {
		got := download(t, r.b, r.err)
		if !slices.Equal(canonical(got), canonical(want[i])) {
			t.Errorf("seed entry point %d differs from FlashAttention's", i)
		}
		r.b.Release()
	}
	// Row 3 of sequence 0 is fully blocked: every score is -1000, so its output is the mean of V.
	got := want[0]
	for c := range d {
		mean := 0.0
		for j := range n {
			mean += float64(v[j*d+c])
		}
		mean /= n
		if math.Abs(float64(got[3*d+c])-mean) > 1e-6 {
			t.Errorf("blocked row: out[%d] = %v, want the mean of V %v", c, got[3*d+c], mean)
		}
	}
	// hasMask false never reads the mask (nil is fine).
	if x, err := FlashAttentionFwd(qb, kb, vb, nil, false, b, n, d, scale); err != nil {
		t.Error(err)
	} else {
		x.Release()
	}
	for _, bad := range []func() error{
		func() error { _, err := FlashAttentionFwd(qb, kb, vb, nil, true, b, n, d, scale); return err },
		func() error { _, err := FlashAttentionFwd(qb, kb, vb, mb, true, b, n, d+1, scale); return err },
		func() error { _, err := FlashAttentionFwd(qb, kb, vb, qb, true, b, n, d, scale); return err },
		func() error {
			_, _, err := FlashAttention(qb, kb, vb, AttentionDims{b, n, n, 0}, 1, AttentionOptions{})
			return err
		},
		func() error {
			_, _, err := FlashAttention(qb, kb, vb, AttentionDims{b, n, n, d}, 1, AttentionOptions{HardMask: true})
			return err
		},
	} {
		if err := bad(); err == nil {
			t.Error("a bad call returned no error")
		}
	}
}

// TestAttentionSharedConstants reads the attention tiles from ptx/attention.cu: the key block of
// the forward (arithmetic) and the launch tiles.
func TestAttentionSharedConstants(t *testing.T) {
	const f = "../ptx/attention.cu"
	rows := []testenv.CUDAConstant{
		{Files: f, Expr: "ATT_BC_64", GoName: "cpu.AttnBC64", Go: cpu.AttnBC64},
		{Files: f, Expr: "ATT_BC_128", GoName: "cpu.AttnBC128", Go: cpu.AttnBC128},
		{Files: f, Expr: "ATT_BC_256", GoName: "cpu.AttnBC256", Go: cpu.AttnBC256},
		{Files: f, Expr: "ATT_MAX_D", GoName: "cpu.AttnMaxD", Go: cpu.AttnMaxD},
		{Files: f, Expr: "ATT_FILL", GoName: "cpu.AttnFill", Go: cpu.AttnFill},
		{Files: f, Expr: "ATT_HARD", GoName: "cpu.AttnHard", Go: cpu.AttnHard},
		{Files: f, Expr: "ATT_CAUSAL", GoName: "cpu.AttnCausal", Go: cpu.AttnCausal},
		{Files: f, Expr: "ATT_FILL_SCORE", GoName: "cpu.AttnFillScore", Go: float64(cpu.AttnFillScore), Float32: true},
		{Files: f, Expr: "ATT_FWD_BR_64", GoName: "attnFwdRowsTable[0]", Go: float64(attnFwdRowsTable[0])},
		{Files: f, Expr: "ATT_FWD_BR_128", GoName: "attnFwdRowsTable[1]", Go: float64(attnFwdRowsTable[1])},
		{Files: f, Expr: "ATT_FWD_BR_256", GoName: "attnFwdRowsTable[2]", Go: float64(attnFwdRowsTable[2])},
		{Files: f, Expr: "ATT_BWD_T_64", GoName: "attnBwdTileTable[0]", Go: float64(attnBwdTileTable[0])},
		{Files: f, Expr: "ATT_BWD_T_128", GoName: "attnBwdTileTable[1]", Go: float64(attnBwdTileTable[1])},
		{Files: f, Expr: "ATT_BWD_T_256", GoName: "attnBwdTileTable[2]", Go: float64(attnBwdTileTable[2])},
	}
	testenv.CheckCUDAConstants(t, rows)
	for _, c := range []struct{ d, want int }{{1, cpu.AttnBC64}, {64, cpu.AttnBC64}, {65, cpu.AttnBC128}, {128, cpu.AttnBC128}, {129, cpu.AttnBC256}, {256, cpu.AttnBC256}} {
		if got := cpu.AttnKeyBlock(c.d); got != c.want {
			t.Errorf("AttnKeyBlock(%d) = %d, want %d", c.d, got, c.want)
		}
	}
}
