package ops

import (
	"fmt"
	"math"
)

// scanMirrorLens and scanMirrorStates are the sequence lengths and state sizes of the scan
// family's mirror cases (every pair, batch 1 and 3): single steps, a warp's edge, the unrolled
// loops' remainders (8 forward, 4 backward), and state counts off the 32-thread warp and the
// 256-thread block.
var (
	scanMirrorLens   = []int{1, 2, 31, 64, 65, 127, 1000, 4096}
	scanMirrorStates = []int{1, 16, 33, 1000}
)

// scanCases are the mirror cases of the selective scan family: forward and backward of both
// forms at every (batch, seqLen, state) of the lists above, on scanInputs' operands (|A| below,
// near and above 1: the states of long sequences grow to infinity in the channels with A > 1),
// and a special set where NaN and infinities enter through A, B, X, h0 and dY.
func scanCases() []mirrorCase {
	var cases []mirrorCase
	add := func(tag string, batch, seqLen, state int, varying bool, edit func(a, b, x, h0, dy []float32)) {
		name, fwd, bwd := "selective_scan_diag", SelectiveScanDiagBatchedFwd, SelectiveScanDiagBatchedBwd
		if varying {
			name, fwd, bwd = "selective_scan_diag_var", SelectiveScanDiagVarBatchedFwd, SelectiveScanDiagVarBatchedBwd
		}
		tag = fmt.Sprintf("%dx%dx%d%s", batch, seqLen, state, tag)
		// operands returns the case's buffers (A, B, X, h0, dY) on d.
		operands := func(d *Device) ([]*Buffer, error) {
			a, b, x, h0, dy := scanInputs(batch, seqLen, state, varying, uint64(seqLen*7+state))
			if edit != nil {
				edit(a, b, x, h0, dy)
			}
			bufs := make([]*Buffer, 5)
			for k, v := range [][]float32{a, b, x, h0, dy} {
				var err error
				if bufs[k], err = FromFloat32(d, v); err != nil {
					releaseAll(bufs[:k])
					return nil, err
				}
			}
			return bufs, nil
		}
		n := batch * seqLen * state
		cases = append(cases,
			mirrorCase{name: name + "_fwd/" + tag, sizes: []int{n},
				run: func(d *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
					in, err := operands(d)
					if err != nil {
						return nil, err
					}
					defer releaseAll(in)
					y, err := fwd(in[0], in[1], in[2], in[3], batch, seqLen, state)
					return []*Buffer{y}, err
				}},
			mirrorCase{name: name + "_bwd/" + tag, sizes: []int{n},
				run: func(d *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
					in, err := operands(d)
					if err != nil {
						return nil, err
					}
					defer releaseAll(in)
					y, err := fwd(in[0], in[1], in[2], in[3], batch, seqLen, state)
					if err != nil {
						return nil, err
					}
					defer y.Release()
					dA, dB, dX, dH0, err := bwd(in[0], in[1], in[2], in[3], y, in[4], batch, seqLen, state)
					return []*Buffer{dA, dB, dX, dH0}, err
				}})
	}
	for _, seqLen := range scanMirrorLens {
		for _, state := range scanMirrorStates {
			for _, batch := range []int{1, 3} {
				add("", batch, seqLen, state, false, nil)
				add("", batch, seqLen, state, true, nil)
			}
		}
	}
	// Specials: channel 0 of sample 1 meets a NaN in X at t = 3; channel 1 an infinite B in sample
	// 0; channel 2 an infinite h0 in sample 2; channel 3 a NaN in dY at t = seqLen-2; channel 4 an
	// A of +Inf (varying: at one step); the other channels stay finite.
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, varying := range []bool{false, true} {
		const batch, seqLen, state = 3, 65, 33
		add("/special", batch, seqLen, state, varying, func(a, b, x, h0, dy []float32) {
			at := func(bi, t, j int) int { return (bi*seqLen+t)*state + j }
			x[at(1, 3, 0)] = nan
			h0[2*state+2] = -inf
			dy[at(0, seqLen-2, 3)] = nan
			if varying {
				b[at(0, 10, 1)] = inf
				a[at(2, 20, 4)] = inf
			} else {
				b[1] = inf
				a[4] = inf
			}
		})
	}
	return cases
}
