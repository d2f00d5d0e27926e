package cpu

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// bmmNaive is Bmm's contract written as the plain triple loop: one accumulator per output,
// starting at +0, Fmaf steps in ascending k (Fmaf itself is checked against big.Float in
// f32math_fma_test.go).
func bmmNaive(a, b []float32, batch, m, n, p int, transA, transB bool) []float32 {
	c := make([]float32, batch*m*p)
	for t := 0; t < batch; t++ {
		at, bt := a[t*m*n:], b[t*n*p:]
		for i := 0; i < m; i++ {
			for j := 0; j < p; j++ {
				acc := float32(0)
				for k := 0; k < n; k++ {
					aik, bkj := at[i*n+k], bt[k*p+j]
					if transA {
						aik = at[k*m+i]
					}
					if transB {
						bkj = bt[j*n+k]
					}
					acc = Fmaf(aik, bkj, acc)
				}
				c[t*m*p+i*p+j] = acc
			}
		}
	}
	return c
}

// mmInput returns len values of both signs and magnitudes 2^-20 .. 2^20 with random
// significands, so that any change of summation order or an extra rounding shows in the bits,
// with +0 and -0 sprinkled in (about 1 in 8 each).
func mmInput(length int, seed uint64) []float32 {
	x := make([]float32, length)
	for i := range x {
		z := SplitMix64(seed<<32 + uint64(i))
		switch z >> 60 {
		case 0, 1:
			x[i] = 0
		case 2, 3:
			x[i] = float32(math.Copysign(0, -1))
		default:
			exp := uint32(127 - 20 + (z>>32)%41)
			x[i] = math.Float32frombits(uint32(z>>59&1)<<31 | exp<<23 | uint32(z)&0x7fffff)
		}
	}
	return x
}

// bmmKernelNames lists "go" and every assembly kernel this CPU runs.
func bmmKernelNames() []string {
	names := []string{"go"}
	for _, k := range gemmKernels {
		names = append(names, k.name)
	}
	return names
}

// checkBmm runs Bmm with every kernel on one problem and compares each result with the naive
// loop bit for bit; an assembly kernel that reads operands in place runs twice, in place and
// with every panel packed (gemmInPlaceOff). c starts filled with NaN so that an output left
// unwritten shows.
func checkBmm(t *testing.T, batch, m, n, p int, transA, transB bool, kernels []string) {
	t.Helper()
	seed := uint64(batch*1000003 + m*10007 + n*101 + p)
	a, b := mmInput(batch*m*n, seed), mmInput(batch*n*p, ^seed)
	want := bmmNaive(a, b, batch, m, n, p, transA, transB)
	c := make([]float32, batch*m*p)
	for _, name := range kernels {
		restore, ok := setGemmKernel(name)
		if !ok {
			restore()
			continue
		}
		for _, packed := range []bool{false, true} {
			if packed && (gemmActive == nil || gemmActive.fs == nil) {
				continue
			}
			gemmInPlaceOff = packed
			for i := range c {
				c[i] = float32(math.NaN())
			}
			Bmm(c, a, b, batch, m, n, p, transA, transB)
			gemmInPlaceOff = false
			for i := range c {
				if !sameBits(c[i], want[i]) {
					restore()
					t.Fatalf("%s (packed %v) batch=%d m=%d n=%d p=%d transA=%v transB=%v: c[%d] = %#x, want %#x",
						name, packed, batch, m, n, p, transA, transB, i, math.Float32bits(c[i]), math.Float32bits(want[i]))
				}
			}
		}
		restore()
	}
}

// TestBmmInPlaceMatchesPacked compares Bmm reading whole panels in place (the default with a
// kernel that can) with Bmm packing every panel, bit for bit, over random shapes (odd sizes,
// multiples of the tiles, K blocks cut anywhere, inputs with NaN, infinities and signed zeros),
// all four transpose combinations, shrunken and default cache blocks, one worker and several.
func TestBmmInPlaceMatchesPacked(t *testing.T) {
	if gemmActive == nil || gemmActive.fs == nil {
		t.Skip("the default kernel does not read operands in place")
	}
	defer func(kc, mc, nc int) { gemmKC, gemmMC, gemmNC = kc, mc, nc }(gemmKC, gemmMC, gemmNC)
	defer func(v int) { gemmMinParallel = v }(gemmMinParallel)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for trial := range 160 {
		z := func(i int) uint64 { return SplitMix64(uint64(trial)<<8 + uint64(i)) }
		size := func(i int, max uint64) int { return 1 + int(z(i)%max) }
		batch, m, n, p := size(0, 3), size(1, 90), size(2, 300), size(3, 110)
		if trial%5 == 0 { // whole tiles
			m, p = 14*size(4, 4), 32*size(5, 3)
		}
		transA, transB := trial&1 != 0, trial&2 != 0
		gemmKC, gemmMC, gemmNC = 256, 448, 4096
		if trial%3 == 1 {
			gemmKC, gemmMC, gemmNC = size(6, 40), size(7, 60), size(8, 100)
		}
		gemmMinParallel = 1 << 20
		runtime.GOMAXPROCS(1)
		if trial%4 == 3 {
			gemmMinParallel = 1
			runtime.GOMAXPROCS(3)
		}
		a, b := mmInput(batch*m*n, uint64(trial)), mmInput(batch*n*p, ^uint64(trial))
		if trial%7 == 0 { // specials: NaN and infinities propagate the same way
			for i := 0; i < len(a); i += 37 {
				a[i] = []float32{inf, -inf, nan}[i%3]
			}
			for i := 5; i < len(b); i += 53 {
				b[i] = []float32{nan, inf, -inf}[i%3]
			}
		}
		want, got := make([]float32, batch*m*p), make([]float32, batch*m*p)
		gemmInPlaceOff = true
		Bmm(want, a, b, batch, m, n, p, transA, transB)
		gemmInPlaceOff = false
		Bmm(got, a, b, batch, m, n, p, transA, transB)
		for i := range got {
			if !sameBits(got[i], want[i]) {
				t.Fatalf("trial %d: batch=%d m=%d n=%d p=%d transA=%v transB=%v blocks (%d, %d, %d): c[%d] = %#x in place, %#x packed",
					trial, batch, m, n, p, transA, transB, gemmKC, gemmMC, gemmNC, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
}

// TestBmmKernelsPresent: on a machine whose CPU has the instructions, the assembly kernels are
// there to be tested (and the best one is the default).
func TestBmmKernelsPresent(t *testing.T) {
	t.Logf("Bmm kernel: %s; available: %v", BmmKernel(), bmmKernelNames())
	if runtime.GOARCH != "amd64" || len(gemmKernels) == 0 {
		t.Skip("no SGEMM assembly kernel on this platform/CPU (or -tags noasm)")
	}
	if BmmKernel() != gemmKernels[0].name {
		t.Fatalf("default kernel %s, want %s", BmmKernel(), gemmKernels[0].name)
	}
}

// TestBmmExact sweeps shapes around the register tiles (14x32, 6x16) and the K block (256),
// all four transpose combinations and batches 0..3, comparing every kernel with the naive loop.
func TestBmmExact(t *testing.T) {
	kernels := bmmKernelNames()
	mps := []int{1, 5, 15, 16, 17, 31, 33, 47, 48, 49, 95}
	ns := []int{0, 1, 2, 7, 255, 256, 257, 300}
	combo := 0
	for mi, m := range mps {
		for pi, p := range mps {
			for _, n := range ns {
				if n >= 255 && (mi+pi)%2 != 0 {
					continue // the K block edge with half of the (m, p) pairs
				}
				// Every (m, n, p) with one transpose combination and batch, in rotation; the
				// small ones with all four.
				tr := []int{combo % 4}
				if m*p*n <= 4096 {
					tr = []int{0, 1, 2, 3}
				}
				batch := []int{1, 3, 2}[combo%3]
				if m*n*p > 200000 {
					batch = 1
				}
				// The pure-Go path costs as much as the reference: every third shape.
				ks := kernels
				if combo%3 != 0 && m*n*p > 4096 {
					ks = ks[1:]
				}
				combo++
				for _, x := range tr {
					checkBmm(t, batch, m, n, p, x&1 != 0, x&2 != 0, ks)
				}
			}
		}
	}
	for _, s := range [][4]int{{1, 1, 1, 1}, {1, 1, 300, 1}, {1, 95, 1, 1}, {1, 17, 33, 65}, {1, 64, 64, 64}, {0, 5, 7, 9}, {3, 0, 7, 9}, {3, 5, 7, 0}, {2, 28, 9, 64}} {
		for x := 0; x < 4; x++ {
			checkBmm(t, s[0], s[1], s[2], s[3], x&1 != 0, x&2 != 0, kernels)
		}
	}
}

// TestBmmBlocking shrinks the cache blocks so that every loop of the blocked driver (column
// blocks, K blocks with reloaded accumulators, row blocks, the scratch tile at the edges) runs
// several times on small problems; also the default blocks past one row and one column block.
func TestBmmBlocking(t *testing.T) {
	kernels := bmmKernelNames()
	defer func(kc, mc, nc int) { gemmKC, gemmMC, gemmNC = kc, mc, nc }(gemmKC, gemmMC, gemmNC)
	for _, blk := range [][3]int{{1, 1, 1}, {5, 20, 40}, {16, 50, 70}, {3, 6, 100}} {
		gemmKC, gemmMC, gemmNC = blk[0], blk[1], blk[2]
		for x, s := range [][4]int{{1, 61, 23, 97}, {3, 29, 17, 33}, {1, 14, 64, 32}, {2, 45, 11, 130}} {
			checkBmm(t, s[0], s[1], s[2], s[3], x&1 != 0, x&2 != 0, kernels)
			checkBmm(t, s[0], s[1], s[2], s[3], x&1 == 0, x&2 == 0, kernels)
		}
	}
	gemmKC, gemmMC, gemmNC = 256, 448, 4096
	checkBmm(t, 1, 913, 3, 40, false, false, kernels)
	checkBmm(t, 1, 3, 2, 4100, false, true, kernels)
	checkBmm(t, 1, 450, 260, 33, true, false, kernels)
}

// TestBmmWorkers runs the parallel split with more goroutines than cores and with one: batches
// that do and do not divide among the workers, matrices cut by rows or by columns.
func TestBmmWorkers(t *testing.T) {
	kernels := bmmKernelNames()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer func(v int) { gemmMinParallel = v }(gemmMinParallel)
	gemmMinParallel = 1
	for _, procs := range []int{1, 3, 4} {
		runtime.GOMAXPROCS(procs)
		for x, s := range [][4]int{{1, 150, 40, 70}, {1, 20, 50, 400}, {3, 45, 33, 99}, {4, 31, 20, 70}, {5, 17, 64, 33}, {13, 14, 30, 32}} {
			checkBmm(t, s[0], s[1], s[2], s[3], x&1 != 0, x&2 != 0, kernels)
		}
	}
}

// TestBmmSpecials: NaN and infinities propagate as IEEE fma says (any NaN result stored as
// CanonicalNaN, like the GPU), overflow gives ±Inf, and the signs of zeros follow the chain
// from +0 (an underflow to -0 survives a later -0 product).
func TestBmmSpecials(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZ := float32(math.Copysign(0, -1))
	tiny := float32(math.Ldexp(1, -80))
	payload := math.Float32frombits(0xffc01234) // a negative NaN with a payload
	const m, n, p = 30, 3, 70                   // full AVX-512 tiles and edges
	cases := []struct {
		name   string
		ak, bk [n]float32
		want   uint32
	}{
		{"inf*0", [n]float32{inf, 1, 1}, [n]float32{0, 1, 1}, CanonicalNaNBits},
		{"inf-inf", [n]float32{inf, -inf, 1}, [n]float32{1, 1, 1}, CanonicalNaNBits},
		{"nan payload", [n]float32{1, payload, 1}, [n]float32{1, 1, 1}, CanonicalNaNBits},
		{"nan then inf", [n]float32{nan, inf, 0}, [n]float32{1, 1, 0}, CanonicalNaNBits},
		{"inf", [n]float32{2, inf, 5}, [n]float32{3, 2, -7}, 0x7f800000},
		{"-inf", [n]float32{2, inf, 5}, [n]float32{3, -2, -7}, 0xff800000},
		{"overflow", [n]float32{3e38, 3e38, 0}, [n]float32{1, 1, 1}, 0x7f800000},
		{"-overflow", [n]float32{-3e38, 1, -3e38}, [n]float32{1, 0, 1}, 0xff800000},
		{"+0 start", [n]float32{negZ, 1, negZ}, [n]float32{1, negZ, negZ}, 0},
		{"underflow -0", [n]float32{-tiny, negZ, 1}, [n]float32{tiny, 1, negZ}, 0x80000000},
		{"exact cancel", [n]float32{1, 1, -2}, [n]float32{1, 1, 1}, 0},
	}
	for _, name := range bmmKernelNames() {
		restore, ok := setGemmKernel(name)
		if !ok {
			restore()
			continue
		}
		for ci, tc := range cases {
			a, b := mmInput(m*n, 7), mmInput(n*p, 8)
			// Output (i, j) gets the case's vectors: row i of A, column j of B.
			i, j := (ci*7)%m, (ci*13+31)%p
			for k := 0; k < n; k++ {
				a[i*n+k], b[k*p+j] = tc.ak[k], tc.bk[k]
			}
			c := make([]float32, m*p)
			Bmm(c, a, b, 1, m, n, p, false, false)
			if got := math.Float32bits(c[i*p+j]); got != tc.want {
				t.Errorf("%s %s: c = %#x, want %#x", name, tc.name, got, tc.want)
			}
			want := bmmNaive(a, b, 1, m, n, p, false, false)
			for e := range c {
				if !sameBits(c[e], want[e]) {
					t.Fatalf("%s %s: c[%d] = %#x, naive %#x", name, tc.name, e, math.Float32bits(c[e]), math.Float32bits(want[e]))
				}
			}
		}
		restore()
	}
}

// TestBmmConcurrent runs Bmm from several goroutines at once (each with its own output); all
// agree with the naive loop.
func TestBmmConcurrent(t *testing.T) {
	defer func(v int) { gemmMinParallel = v }(gemmMinParallel)
	gemmMinParallel = 1
	const batch, m, n, p = 3, 37, 41, 53
	a, b := mmInput(batch*m*n, 1), mmInput(batch*n*p, 2)
	want := bmmNaive(a, b, batch, m, n, p, false, true)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for g := range errs {
		wg.Go(func() {
			c := make([]float32, batch*m*p)
			for range 5 {
				Bmm(c, a, b, batch, m, n, p, false, true)
				for i := range c {
					if !sameBits(c[i], want[i]) {
						errs[g] = fmt.Errorf("goroutine %d: c[%d] = %#x, want %#x", g, i, math.Float32bits(c[i]), math.Float32bits(want[i]))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestBmmPanics: negative sizes and short slices are caller bugs.
func TestBmmPanics(t *testing.T) {
	for _, f := range []func(){
		func() { Bmm(make([]float32, 4), make([]float32, 4), make([]float32, 4), 1, -2, 2, 2, false, false) },
		func() { Bmm(make([]float32, 3), make([]float32, 4), make([]float32, 4), 1, 2, 2, 2, false, false) },
		func() { Bmm(make([]float32, 8), make([]float32, 8), make([]float32, 7), 2, 2, 2, 2, false, false) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
}

// TestBmmSizeCheck: sizes whose products overflow do not pass Bmm's length check.
func TestBmmSizeCheck(t *testing.T) {
	s := make([]float32, 16)
	defer func() {
		if r := recover(); r != "cpu: Bmm: slice shorter than batch*size" {
			t.Errorf("panic %v, want the length check's", r)
		}
	}()
	big := 1 << (strconv.IntSize / 2) // big*big wraps to 0
	Bmm(s, s, s, 1, big, big, big, false, false)
}
