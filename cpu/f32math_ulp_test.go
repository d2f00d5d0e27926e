package cpu

import (
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// ulpErr returns |y - ref| in units of the float32 ulp at ref (ulp(ref) = 2^(e-23) for ref in
// [2^e, 2^(e+1)), e clamped to [-126, 127]). An infinite y counts as ±2^128; ref may lie
// beyond the float32 range. NaN y against a non-NaN ref (or the reverse) is +Inf.
func ulpErr(y float32, ref float64) float64 {
	if math.IsNaN(ref) || y != y {
		if math.IsNaN(ref) && y != y {
			return 0
		}
		return math.Inf(1)
	}
	if math.Abs(ref) >= 0x1p128-0x1p103 { // rounds to ±Inf in float32
		ref = math.Copysign(math.Inf(1), ref)
	}
	yy := float64(y)
	if math.IsInf(yy, 0) {
		if math.IsInf(ref, 0) && (ref > 0) == (yy > 0) {
			return 0
		}
		yy = math.Copysign(0x1p128, yy)
	}
	if math.IsInf(ref, 0) {
		ref = math.Copysign(0x1p129, ref)
	}
	a := math.Abs(ref)
	e := -126
	if a != 0 {
		_, ex := math.Frexp(a) // a = frac*2^ex, frac in [0.5, 1)
		e = ex - 1
	}
	if e < -126 {
		e = -126
	}
	if e > 127 {
		e = 127
	}
	return math.Abs(yy-ref) / math.Ldexp(1, e-23)
}

// unaryCase describes one function for the accuracy sweeps.
type unaryCase struct {
	name  string
	f     func(float32) float32
	ref   func(float64) float64
	in    func(float32) bool // the accuracy domain
	bound float64
}

func sigmoidRef(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// sin2piRef and cos2piRef reduce exactly (u is a float32, so u - q/4 is exact in float64).
func sincos2piRef(u float64) (float64, float64) {
	q := math.RoundToEven(4 * u)
	r := u - q/4
	th := 2 * math.Pi * r
	s, c := math.Sin(th), math.Cos(th)
	switch int64(math.Mod(q, 4)+4) & 3 {
	case 0:
		return s, c
	case 1:
		return c, -s
	case 2:
		return -s, -c
	default:
		return -c, s
	}
}

func all(float32) bool { return true }

func unaryCases() []unaryCase {
	return []unaryCase{
		{"Expf", Expf, math.Exp, all, 2},
		{"Expm1f", Expm1f, math.Expm1, all, 2},
		{"Logf", Logf, math.Log, all, 2},
		{"Log1pf", Log1pf, math.Log1p, all, 2},
		{"Tanhf", Tanhf, math.Tanh, all, 3},
		{"Sigmoidf", Sigmoidf, sigmoidRef, all, 3},
		{"Sin2Pi", func(u float32) float32 { s, _ := SinCos2Pif(u); return s },
			func(u float64) float64 { s, _ := sincos2piRef(u); return s }, all, 2},
		{"Cos2Pi", func(u float32) float32 { _, c := SinCos2Pif(u); return c },
			func(u float64) float64 { _, c := sincos2piRef(u); return c }, all, 2},
	}
}

type sweepResult struct {
	maxErr float64
	worst  float32
	n      int64
}

// sweep evaluates c over the bit patterns start, start+stride, ... (mod 2^32, count of them),
// in parallel over GOMAXPROCS goroutines.
func sweep(c unaryCase, start, stride uint64, count uint64) sweepResult {
	workers := runtime.GOMAXPROCS(0)
	res := make([]sweepResult, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := &res[w]
			for i := uint64(w); i < count; i += uint64(workers) {
				x := math.Float32frombits(uint32(start + i*stride))
				if x != x || !c.in(x) {
					continue
				}
				e := ulpErr(c.f(x), c.ref(float64(x)))
				r.n++
				if e > r.maxErr || e != e {
					r.maxErr, r.worst = e, x
				}
			}
		}(w)
	}
	wg.Wait()
	var out sweepResult
	for _, r := range res {
		out.n += r.n
		if r.maxErr > out.maxErr {
			out.maxErr, out.worst = r.maxErr, r.worst
		}
	}
	return out
}

// TestAccuracySampled checks every 251st float32 bit pattern (about 17 million inputs per
// function; every 4093rd with -short) against float64 references.
func TestAccuracySampled(t *testing.T) {
	stride := uint64(251)
	if testing.Short() {
		stride = 4093
	}
	for _, c := range unaryCases() {
		r := sweep(c, 12345, stride, (1<<32)/stride)
		t.Logf("%-8s max %.3f ulp at %g (0x%08x), %d inputs", c.name, r.maxErr, r.worst, math.Float32bits(r.worst), r.n)
		if !(r.maxErr <= c.bound) {
			t.Errorf("%s: max error %.3f ulp at %g (0x%08x) exceeds %g", c.name, r.maxErr, r.worst, math.Float32bits(r.worst), c.bound)
		}
	}
}

// TestAccuracyExhaustive checks all 2^32 inputs; enabled by TORCHLEAN_EXHAUSTIVE=1
// (optionally TORCHLEAN_EXHAUSTIVE_FUNCS=Expf,Logf to choose functions).
func TestAccuracyExhaustive(t *testing.T) {
	if !exhaustiveEnv() {
		t.Skip("set TORCHLEAN_EXHAUSTIVE=1 to run over all 2^32 inputs")
	}
	only := exhaustiveFuncs()
	for _, c := range unaryCases() {
		if len(only) > 0 && !only[c.name] {
			continue
		}
		r := sweep(c, 0, 1, 1<<32)
		t.Logf("%-8s exhaustive max %.3f ulp at %g (0x%08x), %d inputs", c.name, r.maxErr, r.worst, math.Float32bits(r.worst), r.n)
		if !(r.maxErr <= c.bound) {
			t.Errorf("%s: max error %.3f ulp at %g (0x%08x) exceeds %g", c.name, r.maxErr, r.worst, math.Float32bits(r.worst), c.bound)
		}
	}
}

func exhaustiveEnv() bool { return os.Getenv("TORCHLEAN_EXHAUSTIVE") == "1" }

// exhaustiveFuncs is the set of names in TORCHLEAN_EXHAUSTIVE_FUNCS (comma separated; empty: all).
func exhaustiveFuncs() map[string]bool {
	only := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("TORCHLEAN_EXHAUSTIVE_FUNCS"), ",") {
		if n != "" {
			only[n] = true
		}
	}
	return only
}
