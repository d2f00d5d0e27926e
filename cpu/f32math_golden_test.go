package cpu

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The GPU golden file testdata/f32math_gpu_golden.txt holds, for each function, 256 chunk hashes
// computed on a GPU by testdata/f32math_parity.cu through ptx/f32math.cuh:
//
//	unary f:  hash[c] = sum over bits in [c<<24, (c+1)<<24) of SplitMix64(bits<<32 | bits(f(x)))
//	fma:      hash[c] = sum over i in [c<<16, (c+1)<<16) of SplitMix64(i<<32 | bits(Fmaf(fmaCase(i))))
//
// (sums mod 2^64, SplitMix64 the mixing function of rng.go). TestGPUGolden recomputes them with
// the Go functions, so a CPU-only run checks bit-for-bit GPU parity. By default it checks the
// fma hashes and one chunk of each unary function; TORCHLEAN_EXHAUSTIVE=1 checks all of them
// (all 2^32 inputs of every function). Regenerate the file on a GPU machine (see parity.cu)
// whenever an algorithm changes on purpose.

func fmaExpField(e int64) uint32 {
	if e < 0 {
		return 0
	}
	if e > 254 {
		return 254
	}
	return uint32(e)
}

// fmaCase is the twin of fma_case in testdata/f32math_parity.cu: the i-th Fmaf test triple (bits).
// i&7 picks the kind: 0,1 random bits; 2 cancellation; 3 products near half an ulp of c
// (ties after rounding to float64, including subnormal and overflow ties); 4 subnormal
// results; 5 overflow neighbourhood; 6 c = -(a*b) rounded, ±1 ulp; 7 special values.
func fmaCase(i uint64) (a, b, c uint32) {
	r0, r1, r2 := SplitMix64(i*4+0), SplitMix64(i*4+1), SplitMix64(i*4+2)
	sa, sb, sc := uint32(r1>>63)<<31, uint32(r1>>62&1)<<31, uint32(r2>>63)<<31
	switch i & 7 {
	case 0, 1:
		a = uint32(r0)
		b = uint32(r0 >> 32)
		c = uint32(r1)
	case 2:
		ea, eb := 95+int64(r0%64), 95+int64((r0>>8)%64)
		a = sa | uint32(ea)<<23 | (uint32(r1) & 0x7fffff)
		b = sb | uint32(eb)<<23 | (uint32(r1>>23) & 0x7fffff)
		ec := ea + eb - 127 + int64(r2%40) - 32
		c = sc | fmaExpField(ec)<<23 | (uint32(r2>>9) & 0x7fffff)
	case 3:
		ea, eb := 1+int64(r0%190), 1+int64((r0>>8)%190)
		ma, mb := uint32((r0>>16)%16), 0x7fffff-uint32((r0>>24)%16)
		if (r0>>32)&1 != 0 {
			mb = uint32((r0 >> 33) % 16)
		}
		a = sa | uint32(ea)<<23 | ma
		b = sb | uint32(eb)<<23 | mb
		ec := ea + eb - 127 + 25 + int64((r0>>40)%3) - 1
		if ec < 1 {
			c = sc | (uint32(r2) & 0x7fffff)
		} else if ec > 254 {
			c = sc | 0x7f7fffff
		} else {
			c = sc | uint32(ec)<<23 | (uint32(r2) & 0x7fffff)
		}
	case 4:
		ea := 1 + int64(r0%126)
		eb := 105 - ea + int64((r0>>8)%40) - 20
		if eb < 1 {
			eb = 1
		}
		a = sa | uint32(ea)<<23 | (uint32(r1) & 0x7fffff)
		b = sb | fmaExpField(eb)<<23 | (uint32(r1>>23) & 0x7fffff)
		switch r2 % 4 {
		case 0:
			c = sc
		case 3:
			c = sc | uint32(1+(r2>>30)%3)<<23 | (uint32(r2>>2) & 0x7fffff)
		default:
			c = sc | (uint32(r2>>2) & 0x7fffff)
		}
	case 5:
		ea := 177 + int64(r0%30)
		eb := 372 + int64((r0>>8)%13) - ea
		a = sa | uint32(ea)<<23 | (uint32(r1) & 0x7fffff)
		b = sb | fmaExpField(eb)<<23 | (uint32(r1>>23) & 0x7fffff)
		switch r2 % 3 {
		case 0:
			c = sc | 0x7f7fffff
		case 1:
			c = sc | uint32(253+(r2>>2)%2)<<23 | (uint32(r2>>4) & 0x7fffff)
		default:
			c = uint32(r2 >> 8)
		}
	case 6:
		ea, eb := 64+int64(r0%128), 64+int64((r0>>8)%128)
		a = sa | uint32(ea)<<23 | (uint32(r1) & 0x7fffff)
		b = sb | uint32(eb)<<23 | (uint32(r1>>23) & 0x7fffff)
		c = (math.Float32bits(float32(math.Float32frombits(a)*math.Float32frombits(b))) ^ 0x80000000) +
			uint32(r2%3) - 1
	default:
		tab := [16]uint32{0x00000000, 0x80000000, 0x7f800000, 0xff800000,
			0x7fc00000, 0x3f800000, 0xbf800000, 0x7f7fffff,
			0xff7fffff, 0x00000001, 0x80000001, 0x00800000,
			0x80800000, 0x7fa00001, 0x3f000000, 0x4b800000}
		if r0&1 != 0 {
			a = uint32(r1)
		} else {
			a = tab[(r0>>1)%16]
		}
		if r0&32 != 0 {
			b = uint32(r1 >> 32)
		} else {
			b = tab[(r0>>8)%16]
		}
		if r0&1024 != 0 {
			c = uint32(r2)
		} else {
			c = tab[(r0>>16)%16]
		}
	}
	return a, b, c
}

func fmaCaseF(i uint64) (a, b, c float32) {
	x, y, z := fmaCase(i)
	return math.Float32frombits(x), math.Float32frombits(y), math.Float32frombits(z)
}

// goldenFuncs maps the names of the golden file to the Go functions.
var goldenFuncs = map[string]func(float32) float32{
	"exp":     Expf,
	"expm1":   Expm1f,
	"log":     Logf,
	"log1p":   Log1pf,
	"tanh":    Tanhf,
	"sigmoid": Sigmoidf,
	"sin2pi":  func(u float32) float32 { s, _ := SinCos2Pif(u); return s },
	"cos2pi":  func(u float32) float32 { _, c := SinCos2Pif(u); return c },
	"sqrt":    Sqrtf,
}

func unaryChunkHash(f func(float32) float32, chunk uint32) uint64 {
	workers := runtime.GOMAXPROCS(0)
	sums := make([]uint64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var acc uint64
			for j := uint32(w); j < 1<<24; j += uint32(workers) {
				bits := chunk<<24 | j
				y := f(math.Float32frombits(bits))
				acc += SplitMix64(uint64(bits)<<32 | uint64(math.Float32bits(y)))
			}
			sums[w] = acc
		}(w)
	}
	wg.Wait()
	var s uint64
	for _, v := range sums {
		s += v
	}
	return s
}

func fmaChunkHash(chunk uint64) uint64 {
	var acc uint64
	for i := chunk << 16; i < (chunk+1)<<16; i++ {
		a, b, c := fmaCaseF(i)
		acc += SplitMix64(i<<32 | uint64(math.Float32bits(Fmaf(a, b, c))))
	}
	return acc
}

func readGolden(t *testing.T) map[string][256]uint64 {
	f, err := os.Open("testdata/f32math_gpu_golden.txt")
	if err != nil {
		t.Fatalf("golden file: %v", err)
	}
	defer f.Close()
	out := map[string][256]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 3 {
			t.Fatalf("golden line %q", line)
		}
		c, err1 := strconv.ParseUint(fs[1], 16, 8)
		h, err2 := strconv.ParseUint(fs[2], 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("golden line %q", line)
		}
		a := out[fs[0]]
		a[c] = h
		out[fs[0]] = a
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// defaultGoldenChunk is the chunk (inputs chunk<<24 .. chunk<<24 | 0xffffff) of each unary
// function checked without TORCHLEAN_EXHAUSTIVE: a region where the function does real work.
var defaultGoldenChunk = map[string]uint32{
	"exp":     0xc2, // [-128, -32]: subnormal results and underflow
	"expm1":   0x3e, // [0.125, 0.5): around the k = 0 / k = 1 boundary
	"log":     0x00, // positive subnormals
	"log1p":   0xbf, // [-2, -0.5): NaN, -Inf and the neighbourhood of -1
	"tanh":    0x3f, // [0.5, 2): polynomial and expm1 branches
	"sigmoid": 0xc2, // [-128, -32]: subnormal results and Expf overflow
	"sin2pi":  0x3f, // [0.5, 2)
	"cos2pi":  0x40, // [2, 8)
	"sqrt":    0x00, // positive subnormals
}

func TestGPUGolden(t *testing.T) {
	golden := readGolden(t)
	for name, f := range goldenFuncs {
		want, ok := golden[name]
		if !ok {
			t.Errorf("golden file has no %q", name)
			continue
		}
		chunks := []uint32{defaultGoldenChunk[name]}
		if testing.Short() && name != "exp" {
			chunks = nil
		}
		if exhaustiveEnv() {
			chunks = nil
			for c := uint32(0); c < 256; c++ {
				chunks = append(chunks, c)
			}
		}
		for _, c := range chunks {
			if got := unaryChunkHash(f, c); got != want[c] {
				t.Errorf("%s: chunk %02x (inputs 0x%02x000000..0x%02xffffff): CPU hash %016x, GPU %016x",
					name, c, c, c, got, want[c])
			}
		}
	}
	want, ok := golden["fma"]
	if !ok {
		t.Fatal("golden file has no fma")
	}
	var wg sync.WaitGroup
	got := make([]uint64, 256)
	workers := runtime.GOMAXPROCS(0)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for c := w; c < 256; c += workers {
				got[c] = fmaChunkHash(uint64(c))
			}
		}(w)
	}
	wg.Wait()
	for c := range 256 {
		if got[c] != want[c] {
			t.Errorf("fma: chunk %02x (triples %d..%d): CPU hash %016x, GPU %016x", c, c<<16, (c+1)<<16-1, got[c], want[c])
		}
	}
}

// TestGPUGoldenHashSelf guards the hash definition itself (so that a change to SplitMix64 or to
// the chunking is not mistaken for a change of the functions).
func TestGPUGoldenHashSelf(t *testing.T) {
	if got := SplitMix64(0); got != 0xe220a8397b1dcdaf {
		t.Fatalf("SplitMix64(0) = %#x", got)
	}
	a, b, c := fmaCase(3)
	if s := fmt.Sprintf("%08x %08x %08x", a, b, c); s == "" {
		t.Fatal(s)
	}
}
