package cpu

// Random kernels: the twins of ptx/rng.cu. Element i depends only on (key, i). A kernel's key is
// its key parameter, or DrawKey of it when the kernel reads a count from device memory.

// DrawKey is the key of a draw numbered by a count in device memory (tl_draw_key):
// SplitMix64(key ^ (count + offset)); with key = SplitMix64(seed) it is ops.KeyOf(seed, count + offset).
func DrawKey(key, count, offset uint64) uint64 { return SplitMix64(key ^ (count + offset)) }

// SplitMix64 is the SplitMix64 output function for state x (arithmetic mod 2^64).
func SplitMix64(x uint64) uint64 {
	z := x + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Uniformf maps z to [0, 1): float32(low32(z)) * 2^-32 (one rounding, to nearest even), with
// the rare result 1.0 (low32(z) >= 2^32 - 128) sent to the largest float32 below 1.
func Uniformf(z uint64) float32 {
	f := float32(float32(uint32(z)) * 0x1p-32)
	if f < 1 {
		return f
	}
	return 0x1.fffffep-1
}

// RandUniform: dst[i] = Uniformf(SplitMix64(key + offset + i)).
// offset is the index of dst[0] in the whole buffer (ops splits buffers across goroutines).
func RandUniform(dst []float32, key, offset uint64) {
	for i := range dst {
		dst[i] = Uniformf(SplitMix64(key + offset + uint64(i)))
	}
}

// BernoulliMask: dst[i] = keep > Uniformf(SplitMix64(key + offset + i)) ? 1 : 0.
func BernoulliMask(dst []float32, key, offset uint64, keep float32) {
	for i := range dst {
		var v float32
		if keep > Uniformf(SplitMix64(key+offset+uint64(i))) {
			v = 1
		}
		dst[i] = v
	}
}

// RandNormal: Box-Muller (cosine branch) on the draws 2j and 2j+1 of element j = offset + i:
// u1 = (float32(r1>>9) + 0.5) * 2^-23 in (0, 1), u2 = float32(r2>>8) * 2^-24 in [0, 1),
// z = Sqrtf(-2 * Logf(u1)) * cos(2 pi u2) (SinCos2Pif), dst = mean + std*z.
func RandNormal(dst []float32, key, offset uint64, mean, std float32) {
	for i := range dst {
		j := offset + uint64(i)
		r1 := uint32(SplitMix64(key + 2*j))
		r2 := uint32(SplitMix64(key + 2*j + 1))
		u1 := float32((float32(r1>>9) + 0.5) * 0x1p-23)
		u2 := float32(float32(r2>>8) * 0x1p-24)
		_, c := SinCos2Pif(u2)
		z := float32(Sqrtf(float32(-2*Logf(u1))) * c)
		dst[i] = mean + float32(std*z)
	}
}
