package cpu

import "math"

// Optimizer kernels: the twins of ptx/optim.cu. Each updates its destinations in place from the
// element at the same index of every slice (all slices have the length of param); the float32
// scalars are read from device memory there (ops passes their values here): SGD's are the
// hyperparameters rounded to float32, Adam's come from AdamScalars. Every operation is one
// correctly rounded float32 operation: products are wrapped in float32(...) so that no compiler
// fuses them into an fma, and the square root is Sqrtf.

// Flag bits of SGDMomentumStep.
const (
	SGDFirst    = 1 // the momentum buffer holds no history yet: it becomes d
	SGDNesterov = 2 // Nesterov momentum
)

// SGDStep is one step of plain SGD (no momentum), for each i:
//
//	p, d := param[i], grad[i]
//	if wd != 0 { d = d + float32(wd*p) }
//	param[i] = p - float32(lr*d)
func SGDStep(param, grad []float32, lr, wd float32) {
	grad = grad[:len(param)]
	i := 0
	if wd == 0 { // float32((p - float32(d*lr)) * 1) on vector lanes: the same bits
		i = vecRun(vkSubScaledMul, param, nil, param, grad, nil, lr, 1)
	}
	for ; i < len(param); i++ {
		p, d := param[i], grad[i]
		if wd != 0 {
			d = d + float32(wd*p)
		}
		param[i] = p - float32(lr*d)
	}
}

// SGDMomentumStep is one step of SGD with momentum (PyTorch's torch.optim.SGD), for each i:
//
//	p, d := param[i], grad[i]
//	if wd != 0 { d = d + float32(wd*p) }
//	b := d                                                      // flags&SGDFirst != 0
//	b := float32(buf[i]*momentum) + float32(dampen*d)           // otherwise
//	buf[i] = b
//	d = d + float32(momentum*b)                                 // flags&SGDNesterov != 0
//	d = b                                                       // otherwise
//	param[i] = p - float32(lr*d)
//
// where dampen is 1 - dampening.
func SGDMomentumStep(param, buf, grad []float32, flags uint64, lr, wd, momentum, dampen float32) {
	buf, grad = buf[:len(param)], grad[:len(param)]
	first, nesterov := flags&SGDFirst != 0, flags&SGDNesterov != 0
	for i, p := range param {
		d := grad[i]
		if wd != 0 {
			d = d + float32(wd*p)
		}
		b := d
		if !first {
			b = float32(buf[i]*momentum) + float32(dampen*d)
		}
		buf[i] = b
		if nesterov {
			d = d + float32(momentum*b)
		} else {
			d = b
		}
		param[i] = p - float32(lr*d)
	}
}

// AdamStep is one step of Adam or AdamW, for each i:
//
//	p, g := param[i], grad[i]
//	if wd != 0 { g = g + float32(wd*p) }          // Adam's L2 term (AdamW passes wd = 0)
//	p = float32(p * decay)                         // AdamW's decoupled decay (Adam passes decay = 1)
//	mi := float32(beta1*m[i]) + float32(omb1*g)
//	vi := float32(beta2*v[i]) + float32(float32(omb2*g)*g)
//	den := Sqrtf(vi)/bc2Sqrt + eps
//	param[i] = p - float32(stepSize*(mi/den))
//	m[i], v[i] = mi, vi
//
// with the scalars of AdamScalars.
func AdamStep(param, m, v, grad []float32, beta1, omb1, beta2, omb2, stepSize, bc2Sqrt, eps, wd, decay float32) {
	m, v, grad = m[:len(param)], v[:len(param)], grad[:len(param)]
	s := [9]float32{beta1, omb1, beta2, omb2, stepSize, bc2Sqrt, eps, wd, decay}
	for i := adamFast(param, m, v, grad, &s); i < len(param); i++ {
		p := param[i]
		g := grad[i]
		if wd != 0 {
			g = g + float32(wd*p)
		}
		p = float32(p * decay)
		mi := float32(beta1*m[i]) + float32(omb1*g)
		vi := float32(beta2*v[i]) + float32(float32(omb2*g)*g)
		den := Sqrtf(vi)/bc2Sqrt + eps
		param[i] = p - float32(stepSize*(mi/den))
		m[i], v[i] = mi, vi
	}
}

// AdamHyper is the number of float32 slots of AdamScalars' hyperparameters: six float64 values
// (lr, beta1, beta2, eps, weight decay, decoupled: 1 for AdamW, else 0), each in two slots, low
// 32 bits first.
const AdamHyper = 12

// AdamScalarCount is the number of scalars of one tensor's AdamStep.
const AdamScalarCount = 9

// AdamScalars is the twin of adam_scalars: for each tensor t = list[j] (j in [lo, hi)), it
// advances count t of steps (CountAt) to step = count + 1 and writes the scalars of AdamStep for
// that step to sc[9t:9t+9], from the float64 hyperparameters (PyTorch's formulas, in float64,
// each result rounded to float32 once):
//
//	sc = beta1, 1 - beta1, beta2, 1 - beta2,
//	     lr / (1 - beta1^step),            // stepSize
//	     sqrt(1 - beta2^step),             // bc2Sqrt
//	     eps,
//	     wd, 1                             // Adam: the L2 term, no decay
//	     0, 1 - lr*wd                      // AdamW: decoupled decay
//
// with beta^step by binary exponentiation (float64 products only, so that every platform and
// the GPU compute the same values; lr*wd is rounded before the subtraction).
func AdamScalars(sc, steps, hyper []float32, list []uint32, lo, hi int) {
	h := func(k int) float64 {
		return math.Float64frombits(uint64(math.Float32bits(hyper[2*k])) | uint64(math.Float32bits(hyper[2*k+1]))<<32)
	}
	lr, beta1, beta2, eps, wd := h(0), h(1), h(2), h(3), h(4)
	for _, t := range list[lo:hi] {
		step := CountAt(steps, int(t)) + 1
		SetCountAt(steps, int(t), step)
		s := sc[AdamScalarCount*int(t) : AdamScalarCount*(int(t)+1)]
		s[0], s[1] = float32(beta1), float32(1-beta1)
		s[2], s[3] = float32(beta2), float32(1-beta2)
		s[4] = float32(lr / (1 - powInt(beta1, step)))
		s[5] = float32(math.Sqrt(1 - powInt(beta2, step)))
		s[6] = float32(eps)
		if h(5) != 0 {
			s[7], s[8] = 0, float32(1-float64(lr*wd))
		} else {
			s[7], s[8] = float32(wd), 1
		}
	}
}

// powInt returns b^t by binary exponentiation.
func powInt(b float64, t uint64) float64 {
	r := 1.0
	for ; t > 0; t >>= 1 {
		if t&1 == 1 {
			r = float64(r * b)
		}
		b = float64(b * b)
	}
	return r
}

// Flag bits of RMSpropStep.
const (
	RMSpropCentered = 1 // centered RMSprop: the gradient's running mean (gradAvg) is kept and used
	RMSpropMomentum = 2 // momentum: the update goes through the momentum buffer buf
)

// RMSpropStep is one step of RMSprop (PyTorch's torch.optim.RMSprop), for each i:
//
//	p, g := param[i], grad[i]
//	if wd != 0 { g = g + float32(wd*p) }
//	s := float32(alpha*sq[i]) + float32(float32(oma*g)*g)
//	sq[i] = s
//	a := float32(alpha*gradAvg[i]) + float32(oma*g)    // flags&RMSpropCentered != 0:
//	gradAvg[i] = a
//	avg := Sqrtf(s-float32(a*a)) + eps
//	avg := Sqrtf(s) + eps                               // otherwise
//	b := float32(momentum*buf[i]) + g/avg               // flags&RMSpropMomentum != 0:
//	buf[i] = b
//	param[i] = p - float32(lr*b)
//	param[i] = p - float32(lr*g)/avg                    // otherwise
//
// where oma is 1 - alpha (rounded from float64 by the caller). gradAvg and buf are used only
// under their flags (nil otherwise). PyTorch's CPU kernels contract some of these products into
// fmas, so their results may differ from these in the last bit.
func RMSpropStep(param, sq, gradAvg, buf, grad []float32, flags uint64, lr, alpha, oma, eps, wd, momentum float32) {
	sq, grad = sq[:len(param)], grad[:len(param)]
	centered, withMomentum := flags&RMSpropCentered != 0, flags&RMSpropMomentum != 0
	if centered {
		gradAvg = gradAvg[:len(param)]
	}
	if withMomentum {
		buf = buf[:len(param)]
	}
	for i, p := range param {
		g := grad[i]
		if wd != 0 {
			g = g + float32(wd*p)
		}
		s := float32(alpha*sq[i]) + float32(float32(oma*g)*g)
		sq[i] = s
		var avg float32
		if centered {
			a := float32(alpha*gradAvg[i]) + float32(oma*g)
			gradAvg[i] = a
			avg = Sqrtf(s-float32(a*a)) + eps
		} else {
			avg = Sqrtf(s) + eps
		}
		if withMomentum {
			b := float32(momentum*buf[i]) + g/avg
			buf[i] = b
			param[i] = p - float32(lr*b)
		} else {
			param[i] = p - float32(lr*g)/avg
		}
	}
}
