package ops

import (
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/cpu"
)

// poolMirrorGeom is one pooling geometry of the mirror cases: the input shape (leading axes
// then spatial) and the parameters.
type poolMirrorGeom struct {
	tag   string
	shape []int
	p     PoolParams
}

// poolMirrorGeoms are the geometries of the pooling mirror cases: rank 1, 2 and 3; windows 1,
// 2, 3 and 7; strides 1, 2 and 3; padding up to k/2 and a window over-padded (empty output);
// batch 0, 1 and 3; the ResNet stem's 3x3/2 pad 1 and 2x2/2 on a scaled-down 64x64x56x56
// (2x8x56x56), and rows past a 256-thread block.
func poolMirrorGeoms() []poolMirrorGeom {
	p := func(k, s, pad []int) PoolParams { return PoolParams{Kernel: k, Stride: s, Padding: pad} }
	gs := []poolMirrorGeom{
		{"r1/3x33/k1s1", []int{3, 33}, p([]int{1}, []int{1}, []int{0})},
		{"r1/3x33/k2s2", []int{3, 33}, p([]int{2}, []int{2}, []int{0})},
		{"r1/3x33/k3s1p1", []int{3, 33}, p([]int{3}, []int{1}, []int{1})},
		{"r1/2x3x300/k7s3p3", []int{2, 3, 300}, p([]int{7}, []int{3}, []int{3})},
		{"r1/1x1x5/k7s1", []int{1, 1, 5}, p([]int{7}, []int{1}, []int{0})}, // window larger than input: empty
		{"r1/1x5/k2s1p2", []int{1, 5}, p([]int{2}, []int{1}, []int{2})},    // padding > k/2: empty
		{"r2/4x5x6/k2s1", []int{4, 5, 6}, p([]int{2, 2}, []int{1, 1}, []int{0, 0})},
		{"r2/1x3x17x17/k3s2p1", []int{1, 3, 17, 17}, p([]int{3, 3}, []int{2, 2}, []int{1, 1})},
		{"r2/3x2x9x11/k3x2s3x1p1x0", []int{3, 2, 9, 11}, p([]int{3, 2}, []int{3, 1}, []int{1, 0})},
		{"r2/0x4x9x9/k3s2p1", []int{0, 4, 9, 9}, p([]int{3, 3}, []int{2, 2}, []int{1, 1})},
		{"r2/2x8x56x56/k3s2p1", []int{2, 8, 56, 56}, p([]int{3, 3}, []int{2, 2}, []int{1, 1})},
		{"r2/2x8x56x56/k2s2", []int{2, 8, 56, 56}, p([]int{2, 2}, nil, nil)},
		{"r2/1x2x20x20/k7s2p3", []int{1, 2, 20, 20}, p([]int{7, 7}, []int{2, 2}, []int{3, 3})},
		{"r2/3x1x40x40/k1s3", []int{3, 1, 40, 40}, p([]int{1, 1}, []int{3, 3}, []int{0, 0})}, // cells in no window
		{"r3/2x3x5x6x7/k2x3x2s1x2x3p1x1x0", []int{2, 3, 5, 6, 7}, p([]int{2, 3, 2}, []int{1, 2, 3}, []int{1, 1, 0})},
		{"r3/1x2x8x8x8/k3s2p1", []int{1, 2, 8, 8, 8}, p([]int{3, 3, 3}, []int{2, 2, 2}, []int{1, 1, 1})},
	}
	return gs
}

// poolInputs returns x of n elements and the output gradient of m elements: with ties, x takes
// few values (multiples of 0.25 in [-1, 1]); with specials, NaN, ±Inf and signed zeros appear
// at fixed strides.
func poolInputs(n, m int, ties, specials bool, seed uint64) (x, g []float32) {
	u := func(k uint64, i int) float32 { return float32(cpu.SplitMix64(seed^k<<48^uint64(i))>>40) * 0x1p-24 }
	x, g = make([]float32, n), make([]float32, m)
	for i := range x {
		x[i] = 4*u(1, i) - 2
		if ties {
			x[i] = float32(math.Round(float64(8*u(1, i))))/4 - 1
		}
	}
	for i := range g {
		g[i] = 2*u(2, i) - 1
	}
	if specials {
		nan, inf := float32(math.NaN()), float32(math.Inf(1))
		for i := range x {
			switch i % 23 {
			case 3:
				x[i] = nan
			case 9:
				x[i] = inf
			case 15:
				x[i] = -inf
			case 20:
				x[i] = float32(math.Copysign(0, -1))
			}
		}
		for i := 5; i < m; i += 31 {
			g[i] = nan
		}
	}
	return x, g
}

// poolCases are the mirror cases of the pooling family: max, average (count_include_pad on and
// off) and smooth max (β 1, -0.5 and 8) pooling, forward and backward, and max pooling's
// one-pass forward with offsets and the backward from them, at every geometry of
// poolMirrorGeoms, on random inputs, on inputs with ties, and with NaN, ±Inf and -0.
func poolCases() []mirrorCase {
	type kind struct {
		name string
		p    func(PoolParams) PoolParams
		fwd  func(x *Buffer, s []int, p PoolParams) (*Buffer, error)
		bwd  func(x, g *Buffer, s []int, p PoolParams) (*Buffer, error)
	}
	avgBwd := func(_, g *Buffer, s []int, p PoolParams) (*Buffer, error) { return AvgPoolNDBackward(g, s, p) }
	kinds := []kind{
		{"max_pool", func(p PoolParams) PoolParams { return p }, MaxPoolND, MaxPoolNDBackward},
		{"avg_pool", func(p PoolParams) PoolParams { p.CountIncludePad = true; return p }, AvgPoolND, avgBwd},
		{"avg_pool_nopad", func(p PoolParams) PoolParams { return p }, AvgPoolND, avgBwd},
	}
	for _, beta := range []float64{1, -0.5, 8} {
		kinds = append(kinds, kind{fmt.Sprintf("smooth_max_pool_b%g", beta),
			func(p PoolParams) PoolParams { p.Beta = beta; return p }, SmoothMaxPoolND, SmoothMaxPoolNDBackward})
	}
	var cases []mirrorCase
	for gi, geo := range poolMirrorGeoms() {
		outShape, err := PoolOutShape(geo.shape, geo.p)
		if err != nil {
			panic(err)
		}
		n, m := numel(geo.shape), numel(outShape)
		for _, variant := range []string{"", "/ties", "/special"} {
			if variant != "" && n > 20000 {
				continue
			}
			for _, k := range kinds {
				seed := uint64(gi*131 + len(variant))
				operands := func(d *Device) (x, g *Buffer, err error) {
					xv, gv := poolInputs(n, m, variant == "/ties", variant == "/special", seed)
					if x, err = FromFloat32(d, xv); err != nil {
						return nil, nil, err
					}
					if g, err = FromFloat32(d, gv); err != nil {
						x.Release()
						return nil, nil, err
					}
					return x, g, nil
				}
				p := k.p(geo.p)
				cases = append(cases,
					mirrorCase{name: k.name + "_fwd/" + geo.tag + variant, sizes: []int{n},
						run: func(d *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
							x, g, err := operands(d)
							if err != nil {
								return nil, err
							}
							defer releaseAll([]*Buffer{x, g})
							y, err := k.fwd(x, geo.shape, p)
							return []*Buffer{y}, err
						}},
					mirrorCase{name: k.name + "_bwd/" + geo.tag + variant, sizes: []int{n},
						run: func(d *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
							x, g, err := operands(d)
							if err != nil {
								return nil, err
							}
							defer releaseAll([]*Buffer{x, g})
							dx, err := k.bwd(x, g, geo.shape, p)
							return []*Buffer{dx}, err
						}})
			}
			// Max pooling's one-pass forward (values and offsets) and the backward from its
			// offsets: the same bits as max_pool_fwd and max_pool_bwd above.
			seed := uint64(gi*131 + len(variant))
			p := geo.p
			cases = append(cases, mirrorCase{name: "max_pool_offsets/" + geo.tag + variant, sizes: []int{n},
				run: func(d *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
					xv, gv := poolInputs(n, m, variant == "/ties", variant == "/special", seed)
					x, err := FromFloat32(d, xv)
					if err != nil {
						return nil, err
					}
					defer x.Release()
					g, err := FromFloat32(d, gv)
					if err != nil {
						return nil, err
					}
					defer g.Release()
					y, offsets, err := MaxPoolNDWithOffsets(x, geo.shape, p)
					if err != nil {
						return nil, err
					}
					dx, err := MaxPoolNDBackwardOffsets(offsets, g, geo.shape, p)
					return []*Buffer{y, offsets, dx}, err
				}})
		}
	}
	return cases
}
