package cpu

// Elementwise kernels: the twins of ptx/elementwise.cu. Each writes dst[i] from the inputs at
// index i; all slices have the length of dst. Add, Sub, MulFwd, Scale, ReluFwd, ReluBwd, SqrtFwd and Axpy run
// amd64 assembly when the CPU has AVX (FMA3 for Axpy), with identical results. Every operation is one correctly rounded float32
// operation: products are wrapped in float32(...) so that no compiler fuses them into an fma.

// AbsFwd: dst = |x| (sign bit cleared).
func AbsFwd(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = Absf(x[i])
	}
}

// SqrtFwd: dst = Sqrtf(x) (NaN for x < 0, as IEEE sqrt).
func SqrtFwd(dst, x []float32) {
	if sqrtFast(dst, x) {
		return
	}
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = Sqrtf(x[i])
	}
}

// ExpFwd: dst = Expf(x).
func ExpFwd(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = Expf(x[i])
	}
}

// LogFwd: dst = Logf(x).
func LogFwd(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = Logf(x[i])
	}
}

// InvFwd: dst = 1 / x.
func InvFwd(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = 1 / x[i]
	}
}

// ReluFwd: dst = x > 0 ? x : 0 (NaN gives 0).
func ReluFwd(dst, x []float32) {
	if reluFast(dst, x) {
		return
	}
	x = x[:len(dst)]
	for i := range dst {
		v := x[i]
		if !(v > 0) {
			v = 0
		}
		dst[i] = v
	}
}

// SigmoidFwd: dst = Sigmoidf(x).
func SigmoidFwd(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = Sigmoidf(x[i])
	}
}

// TanhFwd: dst = Tanhf(x).
func TanhFwd(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = Tanhf(x[i])
	}
}

// SoftplusFwd: dst = Softplusf(x).
func SoftplusFwd(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = Softplusf(x[i])
	}
}

// GeluFwd: dst = Geluf(x).
func GeluFwd(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = Geluf(x[i])
	}
}

// SafeLogFwd: dst = Logf(Softplusf(x) + eps).
func SafeLogFwd(dst, x []float32, eps float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = Logf(Softplusf(x[i]) + eps)
	}
}

// Scale: dst = x * c.
func Scale(dst, x []float32, c float32) {
	if scaleFast(dst, x, c) {
		return
	}
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = float32(x[i] * c)
	}
}

// ClampFwd: dst = Clampf(x, lo, hi).
func ClampFwd(dst, x []float32, lo, hi float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = Clampf(x[i], lo, hi)
	}
}

// Add: dst = a + b.
func Add(dst, a, b []float32) {
	if binaryFast('+', dst, a, b) {
		return
	}
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

// Sub: dst = a - b.
func Sub(dst, a, b []float32) {
	if binaryFast('-', dst, a, b) {
		return
	}
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] - b[i]
	}
}

// MulFwd: dst = a * b.
func MulFwd(dst, a, b []float32) {
	if binaryFast('*', dst, a, b) {
		return
	}
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = float32(a[i] * b[i])
	}
}

// DivFwd: dst = a / b.
func DivFwd(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] / b[i]
	}
}

// MaxFwd: dst = Maxf(a, b).
func MaxFwd(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = Maxf(a[i], b[i])
	}
}

// MinFwd: dst = Minf(a, b).
func MinFwd(dst, a, b []float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = Minf(a[i], b[i])
	}
}

// Axpy: dst = Fmaf(c, b, a), the single-rounding a + c*b (with AVX2/FMA3 hardware fused
// multiply-adds on amd64 when the CPU has them; the bits are the same).
func Axpy(dst, a, b []float32, c float32) {
	if axpyFast(dst, a, b, c) {
		return
	}
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = Fmaf(c, b[i], a[i])
	}
}

// AbsBwd: dx = sign(x) * g with sign in {-1, 0, 1} and sign(0) = sign(NaN) = 0.
func AbsBwd(dx, x, g []float32) {
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		var s float32
		if x[i] > 0 {
			s = 1
		} else if x[i] < 0 {
			s = -1
		}
		dx[i] = float32(s * g[i])
	}
}

// SqrtBwd: dx = x > 0 ? g * (1 / (2 * Sqrtf(x))) : 0.
func SqrtBwd(dx, x, g []float32) {
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		var d float32
		if x[i] > 0 {
			d = float32(g[i] * (1 / float32(2*Sqrtf(x[i]))))
		}
		dx[i] = d
	}
}

// ReluBwd: dx = x > 0 ? g : 0.
func ReluBwd(dx, x, g []float32) {
	if reluBwdFast(dx, x, g) {
		return
	}
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		var d float32
		if x[i] > 0 {
			d = g[i]
		}
		dx[i] = d
	}
}

// ExpBwd: dx = g * Expf(x).
func ExpBwd(dx, x, g []float32) {
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		dx[i] = float32(g[i] * Expf(x[i]))
	}
}

// LogBwd: dx = g / x.
func LogBwd(dx, x, g []float32) {
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		dx[i] = g[i] / x[i]
	}
}

// InvBwd: dx = -((g * (1/x)) * (1/x)).
func InvBwd(dx, x, g []float32) {
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		r := 1 / x[i]
		dx[i] = -float32(float32(g[i]*r) * r)
	}
}

// SigmoidBwd: dx = SigmoidBwdf(x, g).
func SigmoidBwd(dx, x, g []float32) {
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		dx[i] = SigmoidBwdf(x[i], g[i])
	}
}

// TanhBwd: dx = TanhBwdf(x, g).
func TanhBwd(dx, x, g []float32) {
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		dx[i] = TanhBwdf(x[i], g[i])
	}
}

// SoftplusBwd: dx = g * Sigmoidf(x).
func SoftplusBwd(dx, x, g []float32) {
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		dx[i] = float32(g[i] * Sigmoidf(x[i]))
	}
}

// GeluBwd: dx = GeluBwdf(x, g).
func GeluBwd(dx, x, g []float32) {
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		dx[i] = GeluBwdf(x[i], g[i])
	}
}

// SafeLogBwd: dx = (g * Sigmoidf(x)) / (Softplusf(x) + eps).
func SafeLogBwd(dx, x, g []float32, eps float32) {
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		dx[i] = float32(g[i]*Sigmoidf(x[i])) / (Softplusf(x[i]) + eps)
	}
}

// ClampBwd: dx = (x > lo && x < hi) ? g : 0.
func ClampBwd(dx, x, g []float32, lo, hi float32) {
	x, g = x[:len(dx)], g[:len(dx)]
	for i := range dx {
		var d float32
		if x[i] > lo && x[i] < hi {
			d = g[i]
		}
		dx[i] = d
	}
}

// MaxBwd: (da, db) = MaxBwdf(a, b, g).
func MaxBwd(da, db, a, b, g []float32) {
	db, a, b, g = db[:len(da)], a[:len(da)], b[:len(da)], g[:len(da)]
	for i := range da {
		da[i], db[i] = MaxBwdf(a[i], b[i], g[i])
	}
}

// MinBwd: (da, db) = MinBwdf(a, b, g).
func MinBwd(da, db, a, b, g []float32) {
	db, a, b, g = db[:len(da)], a[:len(da)], b[:len(da)], g[:len(da)]
	for i := range da {
		da[i], db[i] = MinBwdf(a[i], b[i], g[i])
	}
}

// MulBwd: da = g * b, db = g * a.
func MulBwd(da, db, a, b, g []float32) {
	db, a, b, g = db[:len(da)], a[:len(da)], b[:len(da)], g[:len(da)]
	for i := range da {
		da[i], db[i] = float32(g[i]*b[i]), float32(g[i]*a[i])
	}
}

// DivBwd: da = g / b, db = -(g * (a / (b * b))).
func DivBwd(da, db, a, b, g []float32) {
	db, a, b, g = db[:len(da)], a[:len(da)], b[:len(da)], g[:len(da)]
	for i := range da {
		da[i] = g[i] / b[i]
		db[i] = -float32(g[i] * (a[i] / float32(b[i]*b[i])))
	}
}
