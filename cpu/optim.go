package cpu

// Optimizer kernels: the twins of ptx/optim.cu. Each updates its destinations in place from the
// element at the same index of every slice (all slices have the length of param); the float32
// scalars come from the host (ops/optim.go states how). Every operation is one correctly rounded
// float32 operation: products are wrapped in float32(...) so that no compiler fuses them into an
// fma, and the square root is Sqrtf.

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
	for i, p := range param {
		d := grad[i]
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
// where omb1 = 1 - beta1 and omb2 = 1 - beta2 (each rounded once from float64), stepSize is
// lr / (1 - beta1^t) and bc2Sqrt is sqrt(1 - beta2^t).
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
