package cpu

import "math"

// Whole-buffer reductions: the twin of ptx/reduce.cu.

// SumChunkLen is the number of elements one sum_chunks block reduces.
const SumChunkLen = 8192

const sumThreads = 256

// negZero is -0.0, the identity of float32 addition (-0 + x == x for every x, signed zeros included).
var negZero = math.Float32frombits(1 << 31)

// SumChunks writes out[c] = sum(chunk c) / divisor for each chunk c of SumChunkLen elements of
// x (the last may be shorter); len(out) must be ceil(len(x)/SumChunkLen). Within a chunk,
// accumulator t in 0..255 starts at -0.0 and adds the elements j*1024 + 4t + l for j = 0..7,
// l = 0..3 in that order (indices past the end skipped); the 256 accumulators are then combined
// by the halving tree p[t] += p[t+s], s = 128, 64, ..., 1. On amd64 the whole chunks run in
// assembly (reduce_amd64.s) that makes the same additions in the same order.
func SumChunks(out, x []float32, divisor float32) {
	done := sumChunksFast(out, x, divisor)
	sumChunksGo(out[done:], x[done*SumChunkLen:], divisor)
}

// sumChunksGo is SumChunks in Go: the definition the assembly is tested against.
func sumChunksGo(out, x []float32, divisor float32) {
	var p [sumThreads]float32
	for c := range out {
		chunk := x[c*SumChunkLen : min(len(x), (c+1)*SumChunkLen)]
		for t := range p {
			p[t] = negZero
		}
		if len(chunk) == SumChunkLen {
			for j := 0; j < 8; j++ {
				row := chunk[j*1024 : (j+1)*1024]
				for t := range p {
					q := row[4*t : 4*t+4]
					p[t] = p[t] + q[0] + q[1] + q[2] + q[3]
				}
			}
		} else {
			for e, v := range chunk {
				t := (e % 1024) / 4
				p[t] += v
			}
		}
		for s := sumThreads / 2; s >= 1; s /= 2 {
			for t := 0; t < s; t++ {
				p[t] += p[t+s]
			}
		}
		out[c] = p[0] / divisor
	}
}
