package ops

import (
	"fmt"
	"math"
)

// Scalars of the elementwise rows added with moreCases (mirrorScalars is read by the cases that
// mirrorCases makes for every row of mapOps).
func init() {
	mirrorScalars["pow"] = []float64{2.5}
	mirrorScalars["pow_bwd"] = []float64{2.5, 1.5}
	mirrorScalars["masked_fill"] = []float64{-3.25}
}

// mirrorPowExponents are the exponents of the pow cases: PyTorch's special ones (0, 1, 0.5, 2,
// 3, -0.5, -1, -2), odd and even integers (negative bases keep or lose their sign), fractions,
// huge ones (overflow and underflow) and the non-finite ones.
var mirrorPowExponents = []float64{0, 1, 0.5, 2, 3, -0.5, -1, -2, -1.7, 7, -3, 1.0 / 3, 30.5, 1e10, -1e10,
	math.Inf(1), math.Inf(-1), math.NaN()}

// mirrorSelectSizes are the lengths of the extra pow and selection cases.
var mirrorSelectSizes = []int{0, 1, 31, 33, 257, 4099}

// mirrorCumsumShapes are (rows, cols) shapes of the cumulative sums: empty axes, single
// elements, one long row (a long chain on one GPU thread), many short rows, and shapes off the
// 256-thread blocks; the last ones also with NaN and infinities in their inputs.
var mirrorCumsumShapes = [][2]int{{0, 5}, {5, 0}, {1, 1}, {1, 33}, {33, 1}, {17, 65}, {1, 100003}, {70000, 3},
	{4099, 7}, {257, 300}, {3, 4099}}

var mirrorCumsumSpecial = [][2]int{{17, 65}, {2, 4099}}

// selectCond is a condition of n elements with every kind of truth value: 0, -0 (false), 1, -2.5,
// NaN, +Inf, a subnormal (true), in a pseudo-random pattern.
func selectCond(n int) []float32 {
	kinds := []float32{0, float32(math.Copysign(0, -1)), 1, -2.5, float32(math.NaN()), float32(math.Inf(1)), 1e-45, 0}
	c := make([]float32, n)
	for i := range c {
		c[i] = kinds[(uint64(i)*0x9e3779b97f4a7c15)>>61]
	}
	return c
}

// moreCases are the mirror cases of pow (forward and backward at every exponent of
// mirrorPowExponents, on signed inputs and on their magnitudes), of the selections (where,
// its backward and masked_fill with a condition of every kind) and of the cumulative sums.
func moreCases() []mirrorCase {
	var cases []mirrorCase
	for _, p := range mirrorPowExponents {
		tag := fmt.Sprintf("p=%g", p)
		cases = append(cases,
			mirrorCase{name: "pow/" + tag, ins: 1, sizes: mirrorSelectSizes, run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				y, err := PowScalar(in[0], p)
				return []*Buffer{y}, err
			}},
			mirrorCase{name: "pow/abs/" + tag, ins: 1, sizes: mirrorSelectSizes, run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				a, err := Abs(in[0])
				if err != nil {
					return nil, err
				}
				defer a.Release()
				y, err := PowScalar(a, p)
				return []*Buffer{y}, err
			}},
			mirrorCase{name: "pow_bwd/" + tag, ins: 2, sizes: mirrorSelectSizes, run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				y, err := PowBwd(in[0], in[1], p)
				return []*Buffer{y}, err
			}},
		)
	}
	withCond := func(name string, ins int, run func(c *Buffer, in []*Buffer) ([]*Buffer, error)) mirrorCase {
		return mirrorCase{name: name, ins: ins, sizes: mirrorSelectSizes, run: func(d *Device, in []*Buffer, n int) ([]*Buffer, error) {
			c, err := FromFloat32(d, selectCond(n))
			if err != nil {
				return nil, err
			}
			defer c.Release()
			return run(c, in)
		}}
	}
	cases = append(cases,
		withCond("where/cond", 2, func(c *Buffer, in []*Buffer) ([]*Buffer, error) {
			y, err := Where(c, in[0], in[1])
			return []*Buffer{y}, err
		}),
		withCond("where_bwd/cond", 1, func(c *Buffer, in []*Buffer) ([]*Buffer, error) {
			da, db, err := WhereBwd(c, in[0])
			return []*Buffer{da, db}, err
		}),
		withCond("masked_fill/cond", 1, func(c *Buffer, in []*Buffer) ([]*Buffer, error) {
			y, err := MaskedFill(in[0], c, math.Inf(-1))
			return []*Buffer{y}, err
		}),
	)
	for k, sh := range append(mirrorCumsumShapes[:len(mirrorCumsumShapes):len(mirrorCumsumShapes)], mirrorCumsumSpecial...) {
		r, c := sh[0], sh[1]
		finite := k < len(mirrorCumsumShapes)
		tag := fmt.Sprintf("%dx%d", r, c)
		if !finite {
			tag += "/special"
		}
		cases = append(cases,
			mirrorCase{name: "cumsum_rows/" + tag, ins: 1, finite: finite, lens: []int{r * c}, sizes: []int{r * c},
				run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
					y, err := CumsumRows(in[0], r, c)
					return []*Buffer{y}, err
				}},
			mirrorCase{name: "cumsum_rows_bwd/" + tag, ins: 1, finite: finite, lens: []int{r * c}, sizes: []int{r * c},
				run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
					y, err := CumsumRowsBwd(in[0], r, c)
					return []*Buffer{y}, err
				}},
		)
	}
	return cases
}
