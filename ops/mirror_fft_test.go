package ops

import (
	"fmt"
	"math"
)

// fftMirrorLengths are the lengths of the FFT family's mirror cases: no stage (1, 2), single
// odd radices (3, 5, 7), radices 4 and 2 (8), 4 and 3 (12), Bluestein for an odd and an even
// length (97, 194), 11 and 13 (143), 4, 2 and 5 (1000, 6000), powers of two: all of them on the
// row kernels (rfft_row, irfft_row; fft_row inside Bluestein), and on them with more than 48 KiB
// of shared memory: 6561 (3^8, 8 stages, 52 KiB) and 16384 (complex length fftRowMax, 64 KiB,
// blocks of 1024 threads). Complex lengths above fftRowMax take the per-stage kernels and the
// packing passes: 20020 (10010 = 2*5*7*11*13) and the odd 10395 (3^3*5*7*11).
var fftMirrorLengths = []int{1, 2, 3, 5, 7, 8, 12, 97, 143, 194, 1000, 1024, 4096, 6000, 6561, 8192, 10395, 16384,
	20020}

// fftCases are the mirror cases of the FFT family: rfft1d_packed and irfft1d_packed of batch 0,
// 1 and 3 at every length of fftMirrorLengths on finite inputs, and of rows holding NaN, ±Inf
// and ±0 (row 1 of 3: a NaN; row 2: +Inf and -Inf; the spectrum of a row with a special is NaN
// or infinite, the other rows unaffected).
func fftCases() []mirrorCase {
	var cases []mirrorCase
	for _, n := range fftMirrorLengths {
		bins := n/2 + 1
		for _, batch := range []int{0, 1, 3} {
			tag := fmt.Sprintf("%dx%d", batch, n)
			cases = append(cases,
				mirrorCase{name: "rfft1d_packed/" + tag, ins: 1, finite: true, lens: []int{batch * n}, sizes: []int{batch * n},
					run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
						y, err := Rfft1dPacked(in[0], batch, n)
						return []*Buffer{y}, err
					}},
				mirrorCase{name: "irfft1d_packed/" + tag, ins: 1, finite: true, lens: []int{2 * batch * bins}, sizes: []int{batch * n},
					run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
						y, err := Irfft1dPacked(in[0], batch, n)
						return []*Buffer{y}, err
					}})
		}
		special := func(rowLen int) []float32 {
			x := mirrorInput(3*rowLen, 0, true, nil)
			x[rowLen+rowLen/2] = float32(math.NaN())
			x[2*rowLen] = float32(math.Inf(1))
			x[3*rowLen-1] = float32(math.Inf(-1))
			x[0] = float32(math.Copysign(0, -1))
			return x
		}
		cases = append(cases,
			mirrorCase{name: fmt.Sprintf("rfft1d_packed/special/3x%d", n), sizes: []int{3 * n},
				run: func(d *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
					x, err := FromFloat32(d, special(n))
					if err != nil {
						return nil, err
					}
					defer x.Release()
					y, err := Rfft1dPacked(x, 3, n)
					return []*Buffer{y}, err
				}},
			mirrorCase{name: fmt.Sprintf("irfft1d_packed/special/3x%d", n), sizes: []int{3 * n},
				run: func(d *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
					x, err := FromFloat32(d, special(2*bins))
					if err != nil {
						return nil, err
					}
					defer x.Release()
					y, err := Irfft1dPacked(x, 3, n)
					return []*Buffer{y}, err
				}})
	}
	return cufftMirrorCases(cases) // the exact cases in deterministic mode, then cuFFT's Rel rows
}
