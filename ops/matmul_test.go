package ops

import (
	"math"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/internal/testenv"
)

// refBmm is the contract of Bmm written out: one fma chain per element, k ascending from +0.
func refBmm(a, b []float32, batch, m, n, p int, transA, transB bool) []float32 {
	c := make([]float32, batch*m*p)
	for t := range batch {
		for i := range m {
			for j := range p {
				var acc float32
				for k := range n {
					x := a[t*m*n+i*n+k]
					if transA {
						x = a[t*m*n+k*m+i]
					}
					y := b[t*n*p+k*p+j]
					if transB {
						y = b[t*n*p+j*n+k]
					}
					acc = cpu.Fmaf(x, y, acc)
				}
				c[t*m*p+i*p+j] = acc
			}
		}
	}
	return c
}

func randFloats(n int, seed uint64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(int64(cpu.SplitMix64(seed<<32^uint64(i))>>40)-1<<23) * 0x1p-21
	}
	return v
}

func TestBmmSemantics(t *testing.T) {
	for _, d := range devices(t) {
		for _, s := range [][4]int{{1, 1, 1, 1}, {2, 3, 5, 4}, {3, 17, 33, 65}, {1, 70, 300, 9}} {
			batch, m, n, p := s[0], s[1], s[2], s[3]
			av, bv := randFloats(batch*m*n, 1), randFloats(batch*n*p, 2)
			a, b := mustBuf(t, d, av), mustBuf(t, d, bv)
			for v := range 4 {
				transA, transB := v >= 2, v%2 == 1
				c, err := BmmWithTranspose(a, b, batch, m, n, p, transA, transB)
				got, want := download(t, c, err), refBmm(av, bv, batch, m, n, p, transA, transB)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s bmm %v trans %v %v: element %d is %g, want %g", d, s, transA, transB, i, got[i], want[i])
					}
				}
			}
			a.Release()
			b.Release()
		}

		// The gradients of C = A·B through the transposed variants: dA = dC·Bᵀ, dB = Aᵀ·dC.
		m, n, p := 4, 3, 5
		av, bv, gv := randFloats(m*n, 3), randFloats(n*p, 4), randFloats(m*p, 5)
		a, b, g := mustBuf(t, d, av), mustBuf(t, d, bv), mustBuf(t, d, gv)
		da, err := BmmWithTranspose(g, b, 1, m, p, n, false, true)
		gotA := download(t, da, err)
		db, err := BmmWithTranspose(a, g, 1, n, m, p, true, false)
		gotB := download(t, db, err)
		for i := range m {
			for k := range n {
				want := 0.0
				for j := range p {
					want += float64(gv[i*p+j]) * float64(bv[k*p+j])
				}
				if math.Abs(float64(gotA[i*n+k])-want) > 1e-4 {
					t.Errorf("%s dA[%d][%d] = %g, want %g", d, i, k, gotA[i*n+k], want)
				}
			}
		}
		for k := range n {
			for j := range p {
				want := 0.0
				for i := range m {
					want += float64(av[i*n+k]) * float64(gv[i*p+j])
				}
				if math.Abs(float64(gotB[k*p+j])-want) > 1e-4 {
					t.Errorf("%s dB[%d][%d] = %g, want %g", d, k, j, gotB[k*p+j], want)
				}
			}
		}

		// n == 0 gives zeros; an empty batch gives an empty buffer.
		e := mustBuf(t, d, nil)
		z, err := Bmm(e, e, 2, 3, 0, 4)
		expect(t, "bmm n=0", download(t, z, err), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
		z, err = Bmm(e, e, 0, 3, 5, 4)
		if got := download(t, z, err); len(got) != 0 {
			t.Errorf("%s bmm batch 0: %d elements", d, len(got))
		}
		mm, err := Matmul(a, b, m, n, p)
		if got, want := download(t, mm, err), refBmm(av, bv, 1, m, n, p, false, false); !sameBits(got, want) {
			t.Errorf("%s matmul differs from its contract", d)
		}

		for _, bad := range []struct {
			name           string
			batch, m, n, p int
			want           string
		}{
			{"wrong A", 1, 5, 3, 5, "A has 12 elements"},
			{"wrong B", 1, 4, 3, 6, "B has 15 elements"},
			{"negative", 1, -4, 3, 5, "negative size"},
			{"overflow", testenv.Wide(1 << 40), 1 << 20, 1 << 10, 1, "overflow"},
		} {
			if c, err := Bmm(a, b, bad.batch, bad.m, bad.n, bad.p); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s bmm %s: got %v, want an error containing %q", d, bad.name, err, bad.want)
				if c != nil {
					c.Release()
				}
			}
		}
		for _, x := range []*Buffer{a, b, g, e} {
			x.Release()
		}
		if _, err := Bmm(a, b, 1, m, n, p); err == nil {
			t.Errorf("%s bmm of released buffers: no error", d)
		}
	}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
