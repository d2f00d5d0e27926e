package cpu

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// vecCase is one elementwise kernel as the tests call it: ins inputs, outs outputs.
type vecCase struct {
	name      string
	ins, outs int
	run       func(o [2][]float32, in [3][]float32)
}

func vecCases() []vecCase {
	u := func(name string, f func(dst, x []float32)) vecCase {
		return vecCase{name, 1, 1, func(o [2][]float32, in [3][]float32) { f(o[0], in[0]) }}
	}
	b := func(name string, f func(dst, x, g []float32)) vecCase {
		return vecCase{name, 2, 1, func(o [2][]float32, in [3][]float32) { f(o[0], in[0], in[1]) }}
	}
	t := func(name string, f func(da, db, a, b, g []float32)) vecCase {
		return vecCase{name, 3, 2, func(o [2][]float32, in [3][]float32) { f(o[0], o[1], in[0], in[1], in[2]) }}
	}
	nan := float32(math.NaN())
	cs := []vecCase{
		u("ExpFwd", ExpFwd), u("LogFwd", LogFwd), u("TanhFwd", TanhFwd), u("SigmoidFwd", SigmoidFwd),
		u("SoftplusFwd", SoftplusFwd), u("GeluFwd", GeluFwd), u("AbsFwd", AbsFwd), u("InvFwd", InvFwd),
		b("ExpBwd", ExpBwd), b("SigmoidBwd", SigmoidBwd), b("TanhBwd", TanhBwd),
		b("SoftplusBwd", SoftplusBwd), b("GeluBwd", GeluBwd), b("AbsBwd", AbsBwd),
		b("SqrtBwd", SqrtBwd), b("LogBwd", LogBwd), b("InvBwd", InvBwd),
		b("DivFwd", DivFwd), b("MaxFwd", MaxFwd), b("MinFwd", MinFwd),
		b("Add", Add), b("Sub", Sub), b("MulFwd", MulFwd), u("ReluFwd", ReluFwd), u("SqrtFwd", SqrtFwd),
		b("ReluBwd", ReluBwd), u("Scale", func(dst, x []float32) { Scale(dst, x, -1.7) }),
		b("Axpy", func(dst, a, b []float32) { Axpy(dst, a, b, 0.3) }),
		t("MaxBwd", MaxBwd), t("MinBwd", MinBwd), t("MulBwd", MulBwd), t("DivBwd", DivBwd),
	}
	for _, c := range []float32{0, 3.5, -100, float32(math.Inf(1)), nan} {
		cs = append(cs, u(fmt.Sprintf("ExpSub/c=%g", c), func(dst, x []float32) { ExpSub(dst, x, c) }),
			vecCase{fmt.Sprintf("SubSqAdd/c=%g", c), 2, 2, func(o [2][]float32, in [3][]float32) {
				SubSqAdd(o[0], o[1], in[0], in[1], c)
			}},
			vecCase{fmt.Sprintf("NormAffine/s=%g", c), 3, 1, func(o [2][]float32, in [3][]float32) {
				NormAffine(o[0], in[0], in[1], in[2], c)
			}},
			u(fmt.Sprintf("SubDiv/c=%g", c), func(dst, x []float32) { SubDiv(dst, x, c, 0.75) }),
			u(fmt.Sprintf("ScaleSub/c=%g", c), func(dst, x []float32) { ScaleSub(dst, x, 1.5, c) }),
			b(fmt.Sprintf("SubScaledMul/c=%g", c), func(dst, a, g []float32) { SubScaledMul(dst, a, g, c, -0.3) }),
			b(fmt.Sprintf("SubMul/c=%g", c), func(dst, a, g []float32) { SubMul(dst, a, g, c) }),
			b(fmt.Sprintf("ExpScaleSub/d=%g", c), func(dst, y, g []float32) { ExpScaleSub(dst, y, g, c) }))
	}
	cs = append(cs,
		vecCase{"MulPair", 3, 2, func(o [2][]float32, in [3][]float32) { MulPair(o[0], o[1], in[0], in[1], in[2]) }},
		vecCase{"AddMul", 3, 1, func(o [2][]float32, in [3][]float32) { AddMul(o[0], in[0], in[1], in[2]) }})
	for _, eps := range []float32{1e-6, 0, -1, 0x1p-140, 1} {
		cs = append(cs,
			u(fmt.Sprintf("SafeLogFwd/eps=%g", eps), func(dst, x []float32) { SafeLogFwd(dst, x, eps) }),
			b(fmt.Sprintf("SafeLogBwd/eps=%g", eps), func(dx, x, g []float32) { SafeLogBwd(dx, x, g, eps) }))
	}
	for _, lh := range [][2]float32{{-0.5, 2}, {0, 0}, {float32(math.Copysign(0, -1)), 0}, {nan, 1}, {-1, nan}, {3, -3}} {
		lo, hi := lh[0], lh[1]
		cs = append(cs,
			u(fmt.Sprintf("ClampFwd/%g,%g", lo, hi), func(dst, x []float32) { ClampFwd(dst, x, lo, hi) }),
			b(fmt.Sprintf("ClampBwd/%g,%g", lo, hi), func(dx, x, g []float32) { ClampBwd(dx, x, g, lo, hi) }))
	}
	return cs
}

// vecSpecials are the inputs every kernel sees: zeros, infinities, NaNs of both signs with
// several payloads, the subnormal and normal extremes, and the thresholds of f32math.go.
func vecSpecials() []float32 {
	var s []float32
	for _, b := range []uint32{0, 1, 2, 0x007fffff, 0x00800000, 0x00800001, 0x7f7fffff, 0x7f800000,
		0x7f800001, 0x7fc00000, 0x7fffffff, 0x7fa00000, 0x3f800000, 0x3f000000, 0x40000000,
		0x3f3504f3, 0x3f3504f4, 0x3fb504f3, 0x3fb504f4, 0x33800000, 0x34000000, 0x4b000000} {
		s = append(s, math.Float32frombits(b), math.Float32frombits(b|0x80000000))
	}
	for _, c := range []float32{expHi, expLo, expMid, tanhHi, tanhHi / 2, maxF32, two23, magic,
		0x1.62e43p+6, 0x1.62e42ep+6, 104, -87.5, -89, -0x1.9fe368p+6, -0x1.9d1d9ep+6, 88.72284, -103.97208} {
		s = append(s, c, -c)
		for d := uint32(1); d <= 64; d++ {
			s = append(s, math.Float32frombits(math.Float32bits(c)+d), math.Float32frombits(math.Float32bits(c)-d),
				-math.Float32frombits(math.Float32bits(c)+d), -math.Float32frombits(math.Float32bits(c)-d))
		}
	}
	return s
}

// vecInputs returns n unary inputs: the specials, every exponent with edge and random
// mantissas, the rounding edges of expCore's k = round(x/ln 2), the inputs where GELU's
// v = 2u reaches ±87.5, random bit patterns and random values in the ranges that matter.
func vecInputs(n int, seed uint64) []float32 {
	s := vecSpecials()
	rnd := func() uint64 { seed++; return SplitMix64(seed) }
	for e := uint32(0); e < 256; e++ {
		for _, m := range []uint32{0, 1, 2, 3, 0x7fffff, 0x7ffffe, 0x400000, 0x3fffff, 0x3504f3, 0x3504f2, 0x3504f4, 0x7ff000} {
			s = append(s, math.Float32frombits(e<<23|m), math.Float32frombits(0x80000000|e<<23|m))
		}
		for i := 0; i < 24; i++ {
			m := uint32(rnd()) & 0x807fffff
			s = append(s, math.Float32frombits(e<<23|m))
		}
	}
	// x near (k + 1/2) ln 2 (and for Tanhf's 2a near it): where j = x*log2e + magic changes.
	for k := -152; k <= 130; k++ {
		c := float32((float64(k) + 0.5) * math.Ln2)
		for _, y := range []float32{c, c / 2} {
			for d := int32(-40); d <= 40; d++ {
				s = append(s, math.Float32frombits(uint32(int32(math.Float32bits(y))+d)))
			}
		}
	}
	// GELU: |v| = 87.5 near |x| = 10 (found by bisection on the scalar v).
	geluV := func(x float32) float32 {
		return float32(geluK2 * (x + float32(float32(float32(geluC*x)*x)*x)))
	}
	for _, sign := range []float32{1, -1} {
		lo, hi := float32(5), float32(20)
		for i := 0; i < 60; i++ {
			mid := (lo + hi) / 2
			if absf32(geluV(sign*mid)) < expMid {
				lo = mid
			} else {
				hi = mid
			}
		}
		for d := int32(-100); d <= 100; d++ {
			s = append(s, sign*math.Float32frombits(uint32(int32(math.Float32bits(lo))+d)))
		}
	}
	for len(s) < n {
		r := rnd()
		switch r % 4 {
		case 0:
			s = append(s, math.Float32frombits(uint32(r>>32)))
		case 1:
			s = append(s, float32(int64(r>>40)-1<<23)/(1<<23)*20) // [-20, 20)
		case 2:
			s = append(s, float32(int64(r>>40)-1<<23)/(1<<23)*120) // [-120, 120)
		default:
			s = append(s, float32(r>>40)/(1<<24)) // [0, 1)
		}
	}
	return s[:n]
}

// vecOperands returns the k input slices of a test: the first from vecInputs, the others
// random bit patterns and values, with frequent copies of the first (ties for max/min) and
// special values.
func vecOperands(k, n int, seed uint64) [3][]float32 {
	var in [3][]float32
	in[0] = vecInputs(n, seed)
	sp := vecSpecials()
	for j := 1; j < k; j++ {
		other := vecInputs(n, seed+uint64(j)<<40)
		for i := range other {
			r := SplitMix64(seed + uint64(i)*7 + uint64(j))
			switch r % 8 {
			case 0:
				other[i] = in[0][i]
			case 1:
				other[i] = sp[(r>>8)%uint64(len(sp))]
			case 2:
				other[i] = -in[0][i]
			}
		}
		// Shuffle so that each x meets different partners.
		for i := len(other) - 1; i > 0; i-- {
			r := int(SplitMix64(seed^uint64(i)<<20) % uint64(i+1))
			other[i], other[r] = other[r], other[i]
		}
		in[j] = other
	}
	return in
}

func sameVec(x, y float32) bool {
	return math.Float32bits(x) == math.Float32bits(y) || (x != x && y != y)
}

// runAt runs c at the kernel set level and returns its outputs.
func runAt(level string, c vecCase, in [3][]float32, n int) [2][]float32 {
	prev := useVecLevel(level)
	defer useVecLevel(prev)
	var o [2][]float32
	for k := 0; k < c.outs; k++ {
		o[k] = make([]float32, n)
	}
	c.run(o, in)
	return o
}

// compareVec reports the first few elements where got and want differ (NaN matches NaN).
func compareVec(t *testing.T, what string, in [3][]float32, ins int, got, want [2][]float32, outs int) {
	t.Helper()
	bad := 0
	for k := 0; k < outs; k++ {
		for i := range want[k] {
			if sameVec(got[k][i], want[k][i]) {
				continue
			}
			if bad++; bad <= 5 {
				args := ""
				for j := 0; j < ins; j++ {
					args += fmt.Sprintf(" %#08x (%g)", math.Float32bits(in[j][i]), in[j][i])
				}
				t.Errorf("%s out%d[%d] for%s: got %#08x (%g), want %#08x (%g)", what, k, i, args,
					math.Float32bits(got[k][i]), got[k][i], math.Float32bits(want[k][i]), want[k][i])
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d mismatches in all", what, bad)
	}
}

// TestVecMatchesGo runs every vectorized kernel with each kernel set of this machine (AVX-512,
// AVX2) and with the pure-Go loops (what -tags noasm runs) on a dense sample and requires
// identical bits (any NaN matches any NaN, as in the mirror test).
func TestVecMatchesGo(t *testing.T) {
	n := 1 << 21
	if testing.Short() {
		n = 1 << 16
	}
	levels := vecLevels()
	t.Logf("kernel sets: %v", levels)
	for ci, c := range vecCases() {
		t.Run(c.name, func(t *testing.T) {
			in := vecOperands(c.ins, n, uint64(ci)<<48)
			want := runAt("go", c, in, n)
			for _, l := range levels[:len(levels)-1] {
				compareVec(t, l, in, c.ins, runAt(l, c, in, n), want, c.outs)
			}
		})
	}
}

// TestVecCanonicalNaN: the one-input kernels of the f32math functions return the canonical NaN
// for NaN inputs of either sign and any payload, as the scalar functions do, on every kernel set
// (the vector tanh once gave a negative NaN its sign bit back).
func TestVecCanonicalNaN(t *testing.T) {
	const n = 64
	x := make([]float32, n)
	for i := range x {
		x[i] = math.Float32frombits([]uint32{0x7fc00001, 0xffc00002, 0x7f800123, 0xffffffff}[i%4])
	}
	for _, c := range vecCases() {
		fn, _, _ := strings.Cut(c.name, "/")
		if !slices.Contains([]string{"ExpFwd", "LogFwd", "TanhFwd", "SigmoidFwd", "SoftplusFwd", "SafeLogFwd", "ExpSub"}, fn) {
			continue // the others pass NaN payloads through their arithmetic
		}
		for _, l := range vecLevels() {
			got := runAt(l, c, [3][]float32{x}, n)[0]
			for i, v := range got {
				if math.Float32bits(v) != CanonicalNaNBits {
					t.Errorf("%s (%s) of %#08x = %#08x, want the canonical NaN", c.name, l, math.Float32bits(x[i]), math.Float32bits(v))
					break
				}
			}
		}
	}
}

// TestVecLengths checks every length from 0 to 70 at unaligned offsets (the vector loop, the
// scalar tail) and that nothing past the end of the outputs is written.
func TestVecLengths(t *testing.T) {
	const max = 70
	levels := vecLevels()
	for ci, c := range vecCases() {
		all := vecOperands(c.ins, max+3, uint64(ci)<<40|7)
		for n := 0; n <= max; n++ {
			for _, off := range []int{0, 1, 3} {
				if off+n > max+3 {
					continue
				}
				var in [3][]float32
				for j := 0; j < c.ins; j++ {
					in[j] = all[j][off : off+n]
				}
				var want [2][]float32
				for _, l := range levels {
					prev := useVecLevel(l)
					var o, buf [2][]float32
					for k := 0; k < c.outs; k++ {
						buf[k] = make([]float32, n+off+8)
						for i := range buf[k] {
							buf[k][i] = -12345
						}
						o[k] = buf[k][off : off+n]
					}
					c.run(o, in)
					useVecLevel(prev)
					for k := 0; k < c.outs; k++ {
						for i := range buf[k] {
							if (i < off || i >= off+n) && buf[k][i] != -12345 {
								t.Fatalf("%s %s n=%d off=%d: wrote out%d[%d] outside the slice", c.name, l, n, off, k, i-off)
							}
						}
					}
					if l == levels[0] {
						want = o
						continue
					}
					compareVec(t, fmt.Sprintf("%s %s n=%d off=%d", c.name, l, n, off), in, c.ins, o, want, c.outs)
				}
			}
		}
	}
}

// TestVecConstants checks the constants of vec_amd64.s against the Go constants of the same
// name (f32math.go, rules.go).
func TestVecConstants(t *testing.T) {
	f, err := os.Open("vec_amd64.s")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	want := map[string]float32{"geluC": geluC, "gelu3C": gelu3C, "geluK2": geluK2, "l1pScale": l1pScale,
		"l1pBias": l1pBias, "l1pQ2": l1pQ2, "l1pQ3": l1pQ3, "l1pQ4": l1pQ4, "l1pQ5": l1pQ5}
	tables := map[string][16]uint32{"l1pInvc": l1pInvc, "l1pLogc": l1pLogc}
	tableWords := 0
	for k, v := range goConstants {
		want[k] = v
	}
	re := regexp.MustCompile(`^DATA c_(\w+)<>\+(\d+)\(SB\)/4, \$0x([0-9a-f]{8})$`)
	checked := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		bits, _ := strconv.ParseUint(m[3], 16, 32)
		if tab, ok := tables[m[1]]; ok {
			off, _ := strconv.Atoi(m[2])
			tableWords++
			if off%4 != 0 || off/4 >= 16 || tab[off/4] != uint32(bits) {
				t.Errorf("vec_amd64.s: c_%s+%d = %#08x, not the Go table's", m[1], off, bits)
			}
			continue
		}
		if v, ok := want[m[1]]; ok {
			checked[m[1]] = true
			if uint32(bits) != math.Float32bits(v) {
				t.Errorf("vec_amd64.s: c_%s = %#08x, Go %s = %#08x", m[1], bits, m[1], math.Float32bits(v))
			}
		}
	}
	if len(checked) < 20 {
		t.Errorf("only %d constants checked", len(checked))
	}
	if tableWords != 16*len(tables) {
		t.Errorf("%d table words checked, want %d", tableWords, 16*len(tables))
	}
}

// TestVecExhaustive compares the assembly with the pure-Go loops over all 2^32 inputs x of the
// unary kernels and of the backward kernels (with g = 1, so that dx is the derivative itself);
// enabled by TORCHLEAN_EXHAUSTIVE=1, TORCHLEAN_EXHAUSTIVE_FUNCS=ExpFwd,LogFwd chooses kernels.
func TestVecExhaustive(t *testing.T) {
	if !exhaustiveEnv() {
		t.Skip("set TORCHLEAN_EXHAUSTIVE=1 to run over all 2^32 inputs")
	}
	only := exhaustiveFuncs()
	levels := vecLevels()
	levels = levels[:len(levels)-1]
	const batch = 1 << 22
	workers := runtime.GOMAXPROCS(0)
	for _, c := range vecCases() {
		if c.ins > 2 || c.outs > 1 || (len(only) > 0 && !only[c.name]) {
			continue
		}
		start := time.Now()
		x := make([]float32, batch)
		g := make([]float32, batch)
		for i := range g {
			g[i] = 1
		}
		outs := make([][2][]float32, len(levels)+1)
		for l := range outs {
			outs[l][0] = make([]float32, batch)
		}
		// par runs c on the batch split among the workers.
		par := func(level string, o [2][]float32) {
			prev := useVecLevel(level)
			defer useVecLevel(prev)
			var wg sync.WaitGroup
			step := batch / workers
			for w := 0; w < workers; w++ {
				lo, hi := w*step, (w+1)*step
				if w == workers-1 {
					hi = batch
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					c.run([2][]float32{o[0][lo:hi]}, [3][]float32{x[lo:hi], g[lo:hi]})
				}()
			}
			wg.Wait()
		}
		bad := 0
		for base := uint64(0); base < 1<<32; base += batch {
			for i := range x {
				x[i] = math.Float32frombits(uint32(base) + uint32(i))
			}
			par("go", outs[0])
			for l, level := range levels {
				par(level, outs[l+1])
				for i, w := range outs[0][0] {
					if got := outs[l+1][0][i]; !sameVec(got, w) {
						if bad++; bad <= 10 {
							t.Errorf("%s %s(%#08x): got %#08x, want %#08x", c.name, level, math.Float32bits(x[i]),
								math.Float32bits(got), math.Float32bits(w))
						}
					}
				}
			}
		}
		t.Logf("%-22s all 2^32 inputs, sets %v: %d mismatches, %.1fs", c.name, levels, bad, time.Since(start).Seconds())
	}
}

// BenchmarkVec measures each kernel at 2^24 elements split over GOMAXPROCS goroutines as the
// ops package does, with each kernel set, reusing the outputs; bytes = (inputs + outputs)*4n.
// Copy is the memory-bandwidth reference (8n bytes).
func BenchmarkVec(b *testing.B) {
	const n = 1 << 24
	report := func(b *testing.B, bytes int, start time.Time) {
		b.ReportMetric(float64(bytes)*float64(b.N)/time.Since(start).Seconds()/1e9, "GB/s")
	}
	// Typical operands: x uniform in [-8, 8) ((0, 8] for LogFwd), g and b in [-1, 1).
	in, pos := benchOperands(n)
	var o [2][]float32
	o[0], o[1] = make([]float32, n), make([]float32, n)
	b.Run("Copy", func(b *testing.B) {
		start := time.Now()
		for i := 0; i < b.N; i++ {
			Parallel(n, 1<<15, func(lo, hi int) { copy(o[0][lo:hi], in[0][lo:hi]) })
		}
		report(b, 8*n, start)
	})
	vecBenches(b, in, pos, func(b *testing.B, c vecCase, in [3][]float32) {
		start := time.Now()
		for i := 0; i < b.N; i++ {
			runParallel(c, o, in)
		}
		report(b, 4*n*(c.ins+c.outs), start)
	})
}

// vecBenches runs body(b, c, in) as the sub-benchmark <case>/<kernel set> for every vector case
// and every kernel set of this machine; in holds the operands of benchOperands, with pos as x
// for LogFwd.
func vecBenches(b *testing.B, in [3][]float32, pos []float32, body func(b *testing.B, c vecCase, in [3][]float32)) {
	for _, c := range vecCases() {
		in := in
		if c.name == "LogFwd" {
			in[0] = pos
		}
		for _, l := range vecLevels() {
			b.Run(c.name+"/"+l, func(b *testing.B) {
				prev := useVecLevel(l)
				defer useVecLevel(prev)
				body(b, c, in)
			})
		}
	}
}

// runParallel runs c over o and in split among GOMAXPROCS goroutines, as the ops package does.
func runParallel(c vecCase, o [2][]float32, in [3][]float32) {
	Parallel(len(o[0]), 1<<15, func(lo, hi int) {
		c.run([2][]float32{o[0][lo:hi], o[1][lo:hi]}, [3][]float32{in[0][lo:hi], in[1][lo:hi], in[2][lo:hi]})
	})
}

// benchOperands returns the benchmarks' typical operands of length n: in[0] uniform in [-8, 8),
// in[1] and in[2] in [-1, 1), pos (for LogFwd's x) in (0, 8].
func benchOperands(n int) (in [3][]float32, pos []float32) {
	for j := range in {
		in[j] = make([]float32, n)
		for i := range in[j] {
			r := float32(SplitMix64(uint64(j)<<40+uint64(i))>>40) / (1 << 24) // [0, 1)
			in[j][i] = 2*r - 1
			if j == 0 {
				in[j][i] *= 8
			}
		}
	}
	pos = make([]float32, n)
	for i, v := range in[0] {
		pos[i] = 8 - absf32(v)
	}
	return in, pos
}

// BenchmarkVecCache measures one kernel on 4096 elements in cache, single-threaded (ns/op is
// per element).
func BenchmarkVecCache(b *testing.B) {
	const n = 4096
	in, pos := benchOperands(n)
	var o [2][]float32
	o[0], o[1] = make([]float32, n), make([]float32, n)
	vecBenches(b, in, pos, func(b *testing.B, c vecCase, in [3][]float32) {
		for i := 0; i < b.N; i += n {
			c.run(o, in)
		}
	})
}

// TestVecGenerated checks that vec_amd64.s, vec_amd64.go and vec_kernels.go are what
// cpu/internal/vecgen writes (run `go generate` in cpu after editing it).
func TestVecGenerated(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("regenerating needs the go command (absent on GPU machines)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("go", "run", "./internal/vecgen", dir).CombinedOutput(); err != nil {
		t.Fatalf("go run ./internal/vecgen: %v\n%s", err, out)
	}
	for _, name := range []string{"vec_amd64.s", "vec_amd64.go", "vec_kernels.go"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what cpu/internal/vecgen writes: run go generate in cpu", name)
		}
	}
}
