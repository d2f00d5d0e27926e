package ops

// optimCases are the mirror cases of the optimizer steps. The steps update their operands in
// place, so each case copies its inputs (parameter, gradient, first state, second state; the
// second moment takes |input 3|), runs three steps with the same gradient and returns the
// updated parameter and state. Inputs hold NaN and infinities like the elementwise cases.
func optimCases() []mirrorCase {
	adam := AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	adamL2 := AdamParams{LR: 3e-3, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1}
	adamW := AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2, Decoupled: true}
	var cases []mirrorCase
	for _, c := range []struct {
		name string
		h    AdamParams
	}{{"adam", adam}, {"adam_l2", adamL2}, {"adamw", adamW}} {
		cases = append(cases, mirrorCase{name: "adam_step/" + c.name, ins: 4, sizes: mirrorSizes,
			run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				return stepCopies(in, func(s []*Buffer, k int) error { return AdamStep(s[0], in[1], s[1], s[2], c.h, k+1) })
			}})
	}
	for _, c := range []struct {
		name string
		h    SGDParams
	}{
		{"plain", SGDParams{LR: 0.1, WeightDecay: 0.3}},
		{"momentum", SGDParams{LR: 0.05, Momentum: 0.9, Dampening: 0.3, WeightDecay: 1e-2}},
		{"nesterov", SGDParams{LR: 0.05, Momentum: 0.8, Nesterov: true, WeightDecay: 1e-4}},
	} {
		ins := 3 // parameter, gradient, momentum buffer
		if c.h.Momentum == 0 {
			ins = 2
		}
		cases = append(cases, mirrorCase{name: "sgd_step/" + c.name, ins: ins, sizes: mirrorSizes,
			run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				return stepCopies(in, func(s []*Buffer, k int) error {
					var buf *Buffer
					if len(s) > 1 {
						buf = s[1]
					}
					return SGDStep(s[0], in[1], buf, c.h, k == 0)
				})
			}})
	}
	// RMSprop: inputs parameter, gradient, grad_avg, square_avg (as its absolute value) and the
	// momentum buffer; the outputs are the parameter and the state the case updates.
	for _, c := range []struct {
		name string
		h    RMSpropParams
	}{
		{"plain", RMSpropParams{LR: 1e-2, Alpha: 0.99, Eps: 1e-8}},
		{"centered", RMSpropParams{LR: 1e-2, Alpha: 0.9, Eps: 1e-6, WeightDecay: 0.1, Centered: true}},
		{"momentum", RMSpropParams{LR: 3e-3, Alpha: 0.99, Eps: 1e-8, WeightDecay: 1e-2, Momentum: 0.9}},
		{"centered_momentum", RMSpropParams{LR: 1e-3, Alpha: 0.95, Eps: 1e-5, Momentum: 0.5, Centered: true}},
	} {
		cases = append(cases, mirrorCase{name: "rmsprop_step/" + c.name, ins: 5, sizes: mirrorSizes,
			run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				s, err := stepCopies(in, func(s []*Buffer, _ int) error {
					return RMSpropStep(s[0], in[1], s[2], s[1], s[3], c.h)
				})
				if err != nil {
					return nil, err
				}
				out := []*Buffer{s[0], s[2]} // parameter, square_avg
				for k, used := range []bool{c.h.Centered, c.h.Momentum != 0} {
					if used {
						out = append(out, s[1+2*k])
					} else {
						s[1+2*k].Release()
					}
				}
				return out, nil
			}})
	}
	return cases
}

// stepCopies copies the parameter in[0] and the state in[2:] (the last of four as its absolute
// value), calls step(copies, k) for k = 0, 1, 2 and returns the copies.
func stepCopies(in []*Buffer, step func(s []*Buffer, k int) error) ([]*Buffer, error) {
	var s []*Buffer
	for k, b := range append([]*Buffer{in[0]}, in[2:]...) {
		var c *Buffer
		var err error
		if k == 2 {
			c, err = Abs(b)
		} else {
			c, err = Copy(b)
		}
		if err != nil {
			releaseAll(s)
			return nil, err
		}
		s = append(s, c)
	}
	for k := range 3 {
		if err := step(s, k); err != nil {
			releaseAll(s)
			return nil, err
		}
	}
	return s, nil
}
