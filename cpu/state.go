package cpu

import "math"

// Counts held in device memory: the twins of ptx/state.cu. A count is a uint64 stored in two
// float32 slots of a buffer, its low 32 bits in the first and its high 32 bits in the second (the
// little-endian layout of a u64 in device memory, which the GPU kernels read as u64).

// CountAt returns count k of c (slots 2k and 2k+1).
func CountAt(c []float32, k int) uint64 {
	return uint64(math.Float32bits(c[2*k])) | uint64(math.Float32bits(c[2*k+1]))<<32
}

// SetCountAt stores v as count k of c.
func SetCountAt(c []float32, k int, v uint64) {
	c[2*k], c[2*k+1] = math.Float32frombits(uint32(v)), math.Float32frombits(uint32(v>>32))
}

// CounterAdd: count k += inc (mod 2^64) for the counts k in [lo, hi) of c.
func CounterAdd(c []float32, inc uint64, lo, hi int) {
	for k := lo; k < hi; k++ {
		SetCountAt(c, k, CountAt(c, k)+inc)
	}
}
