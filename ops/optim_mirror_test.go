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
