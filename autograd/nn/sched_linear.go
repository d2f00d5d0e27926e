package nn

import "fmt"

// NewLinearLR scales the learning rate linearly from startFactor to endFactor over totalIters
// steps, then keeps endFactor (PyTorch's LinearLR, in its closed form): after n steps it is
// base * (startFactor + (endFactor - startFactor) * min(n, totalIters) / totalIters), base being
// opt's learning rate now. NewLinearLR(opt, 1, 0, T) decays it to 0 over T steps. startFactor in
// (0, 1], endFactor in [0, 1], totalIters >= 1.
func NewLinearLR(opt Optimizer, startFactor, endFactor float64, totalIters int) (Scheduler, error) {
	const kind = "LinearLR"
	base, err := schedBaseLR(kind, opt)
	if err != nil {
		return nil, err
	}
	if !(startFactor > 0 && startFactor <= 1) || !(endFactor >= 0 && endFactor <= 1) || totalIters < 1 {
		return nil, fmt.Errorf("nn: %s: want startFactor in (0, 1], endFactor in [0, 1] and totalIters >= 1, got %v, %v and %d",
			kind, startFactor, endFactor, totalIters)
	}
	return newClosedForm(kind, opt, base, func(base float64, n int) float64 {
		return base * (startFactor + (endFactor-startFactor)*float64(min(n, totalIters))/float64(totalIters))
	}), nil
}
