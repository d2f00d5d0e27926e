package cpu

import (
	"fmt"
	"math"
	"testing"
)

// sumSpec is SumChunks as its doc comment writes it, index by index: the reference for the Go
// loop (sumChunksGo), which the assembly kernels are compared with.
func sumSpec(out, x []float32, divisor float32) {
	for c := range out {
		chunk := x[c*SumChunkLen : min(len(x), (c+1)*SumChunkLen)]
		var p [sumThreads]float32
		for t := range p {
			p[t] = negZero
			for j := 0; j < 8; j++ {
				for l := 0; l < 4; l++ {
					if e := j*1024 + 4*t + l; e < len(chunk) {
						p[t] = p[t] + chunk[e]
					}
				}
			}
		}
		for s := sumThreads / 2; s >= 1; s /= 2 {
			for t := 0; t < s; t++ {
				p[t] = p[t] + p[t+s]
			}
		}
		out[c] = p[0] / divisor
	}
}

// sumLengths crosses the chunk edges: short partial chunks, lengths around multiples of 8192
// and around the 1024-element rows and 4-element groups inside a partial chunk.
var sumLengths = func() []int {
	ls := []int{0, 1, 2, 3, 4, 5, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025, 4099, 7168, 8191}
	for _, k := range []int{1, 2, 3, 5} {
		for _, d := range []int{-4, -1, 0, 1, 3, 4, 1023, 1024, 4099} {
			ls = append(ls, k*SumChunkLen+d)
		}
	}
	return ls
}()

// sumKinds is the number of patterns of sumValue.
const sumKinds = 6

// sumValue is element i of pattern kind: 0 random with exponents over a wide range (so that every
// change of order shows in the bits); 1 the same with finite specials mixed in (±0, subnormals,
// values near the overflow threshold, whose sums may overflow to ±Inf); 2 every element one of
// those or NaN or ±Inf; 3 cancelling magnitudes (1e30, small, -1e30) whose sum depends on the
// pairing; 4 subnormals only (exact sums until they grow past the subnormal range); 5 zeros of
// both signs, every third chunk all -0 (the sign of a zero sum).
func sumValue(kind int, seed uint64, i int) float32 {
	z := SplitMix64(seed ^ uint64(i)*0x9e3779b97f4a7c15)
	finite := []float32{0, negZero, 1e-40, -1e-40, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		3.4e38, -3.4e38, 1.5e-38, 1}
	switch kind {
	case 1:
		if z%11 == 0 {
			return finite[(z>>8)%uint64(len(finite))]
		}
	case 2:
		specials := append(finite, qNaN, float32(math.Inf(1)), float32(math.Inf(-1)))
		return specials[(z>>8)%uint64(len(specials))]
	case 3:
		switch z % 5 {
		case 0:
			return 1e30
		case 1:
			return -1e30
		}
		return float32(math.Ldexp(float64(int32(z>>32))/(1<<31), int(z>>16)%8))
	case 4:
		return math.Float32frombits(uint32(z>>32)&0x807fffff | 1) // sign and 23-bit mantissa, exponent 0
	case 5:
		if (i/SumChunkLen)%3 == 1 || z%2 == 0 {
			return negZero
		}
		return 0
	}
	return float32(math.Ldexp(float64(int32(z>>32))/(1<<31), int((z>>16)%48)-24))
}

// sumSame compares bits, NaNs by class only: where two NaNs of different payloads meet (an
// input NaN and the default NaN of Inf - Inf), x86 keeps the first operand's, and the Go compiler
// may swap the operands of an addition (the contract compares NaNs by class; a GPU returns one
// canonical NaN).
func sumSame(a, b float32) bool { return sameBits(a, b) || a != a && b != b }

// qNaN is the one NaN the inputs hold.
var qNaN = math.Float32frombits(0x7fc00000)

// The Go loop is the doc comment's order.
func TestSumChunksGoIsSpec(t *testing.T) {
	for _, n := range sumLengths {
		for kind := range sumKinds {
			x := make([]float32, n)
			for i := range x {
				x[i] = sumValue(kind, uint64(n), i)
			}
			chunks := (n + SumChunkLen - 1) / SumChunkLen
			got, want := make([]float32, chunks), make([]float32, chunks)
			sumChunksGo(got, x, 3)
			sumSpec(want, x, 3)
			for c := range want {
				if !sumSame(got[c], want[c]) {
					t.Fatalf("n=%d kind %d chunk %d: Go loop %v (%#x), spec %v (%#x)", n, kind, c,
						got[c], math.Float32bits(got[c]), want[c], math.Float32bits(want[c]))
				}
			}
		}
	}
}

// Every kernel this machine runs gives the Go loop's bits: every pattern of sumValue, several
// divisors, inputs that start at every float offset of a 64-byte line, with guards around out
// that must stay untouched.
func TestSumChunksKernels(t *testing.T) {
	const guard = 16
	for _, l := range sumLevels() {
		t.Run(l, func(t *testing.T) {
			defer useSumLevel(useSumLevel(l))
			for _, n := range sumLengths {
				for kind := range sumKinds {
					for _, div := range []float32{1, 3, float32(max(n, 1)), 0} {
						offset := (n + kind) % 16
						back := make([]float32, offset+n+guard)
						for i := range back {
							back[i] = qNaN // read past the end: a NaN sum
						}
						x := back[offset : offset+n]
						for i := range x {
							x[i] = sumValue(kind, uint64(n)<<8|uint64(kind), i)
						}
						chunks := (n + SumChunkLen - 1) / SumChunkLen
						want := make([]float32, chunks)
						sumChunksGo(want, x, div)
						outBack := make([]float32, chunks+2*guard)
						for i := range outBack {
							outBack[i] = 12345
						}
						out := outBack[guard : guard+chunks]
						SumChunks(out, x, div)
						for c := range want {
							if !sumSame(out[c], want[c]) {
								t.Fatalf("n=%d kind %d divisor %v chunk %d: %s %v (%#x), Go %v (%#x)", n, kind, div, c, l,
									out[c], math.Float32bits(out[c]), want[c], math.Float32bits(want[c]))
							}
						}
						for i, v := range outBack {
							if (i < guard || i >= guard+chunks) && v != 12345 {
								t.Fatalf("n=%d: %s wrote out-of-range element %d", n, l, i-guard)
							}
						}
					}
				}
			}
		})
	}
}

// One value placed at each position of a chunk of zeros and a ramp elsewhere: a kernel that
// adds an element to the wrong accumulator, or in the wrong turn, changes the bits (the values
// are chosen so that rounding depends on the order).
func TestSumChunksPositions(t *testing.T) {
	x := make([]float32, 2*SumChunkLen)
	for i := range x {
		x[i] = float32(i%977) * 1.0000001
	}
	want, got := make([]float32, 2), make([]float32, 2)
	for _, l := range sumLevels() {
		func() {
			defer useSumLevel(useSumLevel(l))
			for e := 0; e < SumChunkLen; e += 1 + e/64 {
				old := x[SumChunkLen+e]
				x[SumChunkLen+e] = 3.0e7
				sumChunksGo(want, x, 1)
				SumChunks(got, x, 1)
				x[SumChunkLen+e] = old
				if !sumSame(got[0], want[0]) || !sumSame(got[1], want[1]) {
					t.Fatalf("%s: big value at %d: %v %v, Go %v %v", l, e, got[0], got[1], want[0], want[1])
				}
			}
		}()
	}
}

// Sums pass after pass, as ops.Sum does, at a few lengths: every kernel gives the Go loop's bits.
func TestSumChunksPasses(t *testing.T) {
	sum := func(x []float32, f func(out, x []float32, divisor float32)) float32 {
		for len(x) > 1 {
			out := make([]float32, (len(x)+SumChunkLen-1)/SumChunkLen)
			f(out, x, 1)
			x = out
		}
		return x[0]
	}
	for _, n := range []int{1 << 20, 1<<20 + 3, 3*SumChunkLen*SumChunkLen + 5} {
		x := make([]float32, n)
		for i := range x {
			x[i] = sumValue(0, 7, i)
		}
		want := sum(x, sumChunksGo)
		for _, l := range sumLevels() {
			func() {
				defer useSumLevel(useSumLevel(l))
				if got := sum(x, SumChunks); !sumSame(got, want) {
					t.Fatalf("n=%d: %s %v (%#x), Go %v (%#x)", n, l, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}()
		}
	}
}

// BenchmarkSumChunks: one thread with each kernel over 2^24 elements (from memory) and 2^17 (from
// the L2 cache), bytes = 4n read.
func BenchmarkSumChunks(b *testing.B) {
	for _, n := range []int{1 << 24, 1 << 17} {
		x := make([]float32, n)
		for i := range x {
			x[i] = sumValue(0, 1, i)
		}
		out := make([]float32, n/SumChunkLen)
		for _, l := range sumLevels() {
			b.Run(fmt.Sprintf("%s/n=%d", l, n), func(b *testing.B) {
				defer useSumLevel(useSumLevel(l))
				b.SetBytes(int64(4 * n))
				for b.Loop() {
					SumChunks(out, x, 1)
				}
			})
		}
	}
}

// BenchmarkSumBandwidth: SumChunks over 2^24 elements split by Parallel as ops.Sum's first pass
// splits it (bytes = 4n read), and the bandwidth reference, a parallel copy of 2^24 floats
// between buffers allocated once (bytes = 8n, read and written).
func BenchmarkSumBandwidth(b *testing.B) {
	const n = 1 << 24
	x := make([]float32, n)
	for i := range x {
		x[i] = sumValue(0, 1, i)
	}
	y := make([]float32, n)
	out := make([]float32, n/SumChunkLen)
	b.Run(fmt.Sprintf("sum/n=%d", n), func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			Parallel(len(out), 4, func(lo, hi int) { SumChunks(out[lo:hi], x[lo*SumChunkLen:hi*SumChunkLen], 1) })
		}
	})
	b.Run(fmt.Sprintf("copy/n=%d", n), func(b *testing.B) {
		b.SetBytes(8 * n)
		for b.Loop() {
			Parallel(n, 1<<16, func(lo, hi int) { copy(y[lo:hi], x[lo:hi]) })
		}
	})
}
