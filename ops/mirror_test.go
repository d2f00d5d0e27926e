package ops

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/internal/testenv"
)

// The mirror test runs every kernel on the CPU and on the GPU over sizes that cross block and
// chunk edges, and requires identical bits (NaN payloads aside: any NaN matches any NaN). On the
// GPU every allocation carries NaN guard bands that must survive, inputs must come back
// unchanged, and live bytes must return to their baseline (on the CPU too, where the CPU-only
// TestMirrorGolden checks it as well). GPU runs write a hash of every output
// to $TORCHLEAN_GOLDEN_OUT/mirror-golden.txt; committed as testdata/mirror-golden.txt, it lets
// the CPU-only suite check that the CPU still computes what the GPU computed.

var mirrorSizes = []int{0, 1, 31, 32, 33, 255, 256, 257, 4099, 1<<20 + 3}

// sumSizes add chunk edges and a three-pass length for the whole-buffer reductions.
var sumSizes = append(slices.Clone(mirrorSizes), 8191, 8192, 8193, 8192*8192+8193)

type mirrorCase struct {
	name   string
	ins    int   // number of inputs
	finite bool  // inputs without NaN/Inf
	lens   []int // input lengths, when they are not the case's size n
	sizes  []int
	run    func(d *Device, ins []*Buffer, n int) ([]*Buffer, error)
	tier   tier // zero: exact
}

// tier is how a mirror case is checked. Exact (the zero tier): the GPU's bits equal the CPU's,
// and the GPU's hash goes into the golden file. Rel(tol), for results this project does not
// control (atomics in fast mode, cuFFT): each output is within tol of the same case run by ref,
// an exact path, on the same device (|got - want| <= tol * max(1, |want|), NaN where NaN), on
// either device; never hashed.
type tier struct {
	rel float64
	ref func(d *Device, ins []*Buffer, n int) ([]*Buffer, error)
	// byMax scales the tolerance by the largest magnitude of the whole output instead of each
	// element's own: for transforms (an FFT), whose rounding error is a fraction of the output's
	// norm, spread over every element alike.
	byMax bool
}

// relTier is the Rel(tol) tier against the exact path ref.
func relTier(tol float64, ref func(d *Device, ins []*Buffer, n int) ([]*Buffer, error)) tier {
	return tier{rel: tol, ref: ref}
}

func (t tier) exact() bool { return t.ref == nil }

// within returns the first element of got outside the tier's tolerance of want (-1: none).
func (t tier) within(got, want []float32) int {
	if len(got) != len(want) {
		return 0
	}
	top := 1.0
	if t.byMax {
		for _, w := range want {
			if a := math.Abs(float64(w)); a > top && !math.IsInf(a, 0) {
				top = a
			}
		}
	}
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) || math.IsNaN(g) {
			if math.IsNaN(w) != math.IsNaN(g) {
				return i
			}
			continue
		}
		scale := math.Max(1, math.Abs(w))
		if t.byMax {
			scale = top
		}
		if math.Abs(g-w) > t.rel*scale {
			return i
		}
	}
	return -1
}

// mirrorScalars are the scalars each elementwise row runs with.
var mirrorScalars = map[string][]float64{
	"safe_log": {1e-6}, "safe_log_bwd": {1e-6}, "scale": {-1.7}, "axpy": {0.3},
	"clamp": {-0.5, 2}, "clamp_bwd": {-0.5, 2},
}

func mirrorCases() []mirrorCase {
	var cases []mirrorCase
	for _, op := range mapOps {
		cases = append(cases, mirrorCase{name: op.name, ins: op.ins, sizes: mirrorSizes,
			run: func(d *Device, ins []*Buffer, n int) ([]*Buffer, error) {
				outs, err := op.run(ins, mirrorScalars[op.name]...)
				return outs[:op.outs], err
			}})
	}
	const key = 0x0123456789abcdef
	cases = append(cases,
		mirrorCase{name: "rand_uniform", sizes: mirrorSizes, run: func(d *Device, _ []*Buffer, n int) ([]*Buffer, error) {
			b, err := RandUniform(d, n, key)
			return []*Buffer{b}, err
		}},
		mirrorCase{name: "bernoulli_mask", sizes: mirrorSizes, run: func(d *Device, _ []*Buffer, n int) ([]*Buffer, error) {
			b, err := BernoulliMask(d, n, 0.35, key)
			return []*Buffer{b}, err
		}},
		mirrorCase{name: "rand_normal", sizes: mirrorSizes, run: func(d *Device, _ []*Buffer, n int) ([]*Buffer, error) {
			b, err := RandNormal(d, n, 0.5, 2, key)
			return []*Buffer{b}, err
		}},
		mirrorCase{name: "sum", ins: 1, finite: true, sizes: sumSizes, run: func(d *Device, ins []*Buffer, n int) ([]*Buffer, error) {
			b, err := Sum(ins[0])
			return []*Buffer{b}, err
		}},
		mirrorCase{name: "mean", ins: 1, finite: true, sizes: sumSizes, run: func(d *Device, ins []*Buffer, n int) ([]*Buffer, error) {
			b, err := Mean(ins[0])
			return []*Buffer{b}, err
		}},
		mirrorCase{name: "sum_special", ins: 1, sizes: mirrorSizes, run: func(d *Device, ins []*Buffer, n int) ([]*Buffer, error) {
			b, err := Sum(ins[0])
			return []*Buffer{b}, err
		}},
	)
	cases = append(cases, shapeCases()...)
	cases = append(cases, ndCases()...)
	cases = append(cases, optimCases()...)
	cases = append(cases, stateCases()...)
	cases = append(cases, selectCases()...)
	cases = append(cases, moreCases()...)
	cases = append(cases, fftCases()...)
	cases = append(cases, attentionCases()...)
	cases = append(cases, scanCases()...)
	cases = append(cases, convCases()...)
	cases = append(cases, poolCases()...)
	return append(cases, matmulCases()...)
}

// stateCases are the mirror cases of the step state: counts advanced on the device (a count
// near 2^32 carries into the high word, one near 2^64 wraps) and random draws keyed from a
// device count at an offset (the same bits as RandUniform etc. with ops.KeyOf's key).
func stateCases() []mirrorCase {
	const seed = 0x5eed
	var cases []mirrorCase
	for _, start := range []uint64{0, 1<<32 - 2, 1<<64 - 2} {
		cases = append(cases, mirrorCase{name: fmt.Sprintf("counter_add/%#x", start), sizes: []int{1},
			run: func(d *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
				c, err := NewCounter(d, start)
				if err != nil {
					return nil, err
				}
				for _, inc := range []uint64{1, 2, 1 << 40} {
					if err := c.Add(inc); err != nil {
						c.Release()
						return nil, err
					}
				}
				return []*Buffer{c.buf}, nil
			}})
	}
	at := func(name string, draw func(c *Counter, n int, offset uint64) (*Buffer, error)) {
		cases = append(cases, mirrorCase{name: name, sizes: mirrorSizes,
			run: func(d *Device, _ []*Buffer, n int) ([]*Buffer, error) {
				c, err := NewCounter(d, 1<<32-1)
				if err != nil {
					return nil, err
				}
				defer c.Release()
				b, err := draw(c, n, 3)
				return []*Buffer{b}, err
			}})
	}
	at("rand_uniform_at", func(c *Counter, n int, off uint64) (*Buffer, error) { return RandUniformAt(c, n, seed, off) })
	at("bernoulli_mask_at", func(c *Counter, n int, off uint64) (*Buffer, error) {
		return BernoulliMaskAt(c, n, 0.35, seed, off)
	})
	at("rand_normal_at", func(c *Counter, n int, off uint64) (*Buffer, error) {
		return RandNormalAt(c, n, 0.5, 2, seed, off)
	})
	return cases
}

// mirrorMatmuls are (batch, m, n, p) products: empty batches and K, vectors, sizes off every
// tile (the 32 x 32-tile kernel takes the small ones, up to the layers of an MLP), the 64 x
// 128-tile kernel with ragged edges and with several tiles per block (short K), the 128 x 64-tile
// kernel (p of at most 64) with 16-byte and scalar loads, ragged edges and several tiles per
// block, and (the last two) the 128 x 128-tile kernel (n > 256 and at least 256 such tiles), the
// second with ragged edges. TestKernelCoverage checks that every kernel is reached.
var mirrorMatmuls = [][4]int{{1, 1, 1, 1}, {0, 5, 7, 3}, {2, 3, 0, 4}, {1, 1, 257, 300}, {1, 300, 257, 1},
	{1, 17, 33, 65}, {3, 17, 33, 65}, {1, 127, 129, 255}, {1, 128, 784, 512}, {1, 128, 512, 10},
	{1, 1000, 33, 1100}, {32, 256, 64, 512}, {1, 2049, 300, 2055},
	{20, 256, 300, 64}, {16, 260, 300, 61}, {600, 130, 20, 33},
	{1, 2048, 257, 2049}, {2, 1100, 300, 1030}}

// matmulCases run every product of mirrorMatmuls in the four transpose variants; one also with
// NaN and infinities in its inputs.
func matmulCases() []mirrorCase {
	var cases []mirrorCase
	for i, s := range mirrorMatmuls {
		batch, m, n, p := s[0], s[1], s[2], s[3]
		for v := range 4 {
			transA, transB := v >= 2, v%2 == 1
			cases = append(cases, mirrorCase{
				name:   fmt.Sprintf("bmm/%dx%dx%dx%d/t%d%d", batch, m, n, p, v/2, v%2),
				ins:    2,
				finite: i != 5,
				lens:   []int{batch * m * n, batch * n * p},
				sizes:  []int{batch * m * p},
				run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
					c, err := BmmWithTranspose(in[0], in[1], batch, m, n, p, transA, transB)
					return []*Buffer{c}, err
				}})
		}
	}
	return cases
}

// mirrorBroadcasts add shapes that cross block edges to viewCases.
var mirrorBroadcasts = append(viewCases[1:len(viewCases):len(viewCases)],
	struct{ in, out, axisMap []int }{[]int{1000, 1, 17}, []int{1000, 33, 17}, []int{1, 2, 3}},
	struct{ in, out, axisMap []int }{[]int{1, 300, 1}, []int{40, 300, 50}, []int{1, 2, 3}},
	struct{ in, out, axisMap []int }{[]int{}, []int{70000}, []int{0}},
	struct{ in, out, axisMap []int }{[]int{257}, []int{1000, 257}, []int{0, 1}},
	struct{ in, out, axisMap []int }{[]int{1000, 1}, []int{1000, 257}, []int{1, 2}},
	// Rows of 16-byte vectors: copied in two segments; repeated.
	struct{ in, out, axisMap []int }{[]int{3, 1, 4100}, []int{3, 5, 4100}, []int{1, 2, 3}},
	struct{ in, out, axisMap []int }{[]int{1, 7, 1}, []int{3, 7, 8}, []int{1, 2, 3}})

// mirrorIndices are k = 5000 host indices into 4099 rows: repeats, and out-of-range ones.
func mirrorIndices() []int {
	idx := make([]int, 5000)
	for j := range idx {
		idx[j] = int(cpu.SplitMix64(uint64(j)) % 4200)
	}
	return idx
}

// ndCases are the N-D layout, axis-reduction and indexing cases (the scatters in deterministic
// mode).
func ndCases() []mirrorCase {
	var cases []mirrorCase
	add := func(name string, lens []int, run func(ins []*Buffer) (*Buffer, error)) {
		cases = append(cases, mirrorCase{name: name, ins: len(lens), finite: true, lens: lens, sizes: []int{lens[0]},
			run: func(d *Device, ins []*Buffer, _ int) ([]*Buffer, error) {
				b, err := run(ins)
				return []*Buffer{b}, err
			}})
	}
	for _, c := range mirrorBroadcasts {
		tag := fmt.Sprintf("%v->%v", c.in, c.out)
		add("broadcast_to/"+tag, []int{numel(c.in)}, func(in []*Buffer) (*Buffer, error) {
			return BroadcastTo(in[0], c.in, c.out, c.axisMap)
		})
		add("reduce_from_broadcast/"+tag, []int{numel(c.out)}, func(in []*Buffer) (*Buffer, error) {
			return ReduceFromBroadcastTo(in[0], c.in, c.out, c.axisMap)
		})
	}
	for _, c := range []struct {
		dims  []int
		depth int
	}{{[]int{17, 65}, 0}, {[]int{5, 33, 65, 3}, 1}, {[]int{3, 31, 257, 1}, 1}, {[]int{2, 1, 2, 1, 2, 1, 2, 3}, 6},
		{[]int{64, 300, 70}, 0}, {[]int{3, 17, 33, 8}, 1}} {
		add(fmt.Sprintf("swap_adjacent_at_depth/%v@%d", c.dims, c.depth), []int{numel(c.dims)}, func(in []*Buffer) (*Buffer, error) {
			return SwapAdjacentAtDepth(in[0], c.dims, c.depth)
		})
	}
	for _, c := range []struct {
		dims []int
		axis int
	}{{[]int{70000, 3}, 0}, {[]int{3, 100003}, 1}, {[]int{5, 130, 7}, 1}, {[]int{4, 3, 2, 5}, 2}, {[]int{3, 0, 4}, 1},
		{[]int{33, 1000, 31}, 1}, {[]int{3, 1003, 36}, 1}} {
		tag := fmt.Sprintf("%v@%d", c.dims, c.axis)
		add("reduce_sum_axis/"+tag, []int{numel(c.dims)}, func(in []*Buffer) (*Buffer, error) { return ReduceSumAxis(in[0], c.dims, c.axis) })
		add("reduce_mean_axis/"+tag, []int{numel(c.dims)}, func(in []*Buffer) (*Buffer, error) { return ReduceMeanAxis(in[0], c.dims, c.axis) })
	}
	// Column maxima of 4-column vectors with a partial last chunk; the one-pass chunked kernels
	// (which byColumn takes only for very many columns) on small shapes, 4-column vectors or not.
	add("reduce_max_by_column/1003x36", []int{1003 * 36}, func(in []*Buffer) (*Buffer, error) { return ReduceMaxByColumn(in[0], 1003, 36) })
	// Paths where the order of a long reduction matters: column sums direct, in two stages
	// (16-byte and single-column chunks; a second stage of one or several tiles), in one pass,
	// and the softmax VJPs' register and loop paths.
	for _, sh := range [][2]int{{60, 37}, {4100, 36}, {70000, 5}} {
		r, c := sh[0], sh[1]
		tag := fmt.Sprintf("%dx%d/finite", r, c)
		add("reduce_sum_by_column/"+tag, []int{r * c}, func(in []*Buffer) (*Buffer, error) { return ReduceSumByColumn(in[0], r, c) })
		add("reduce_max_by_column/"+tag, []int{r * c}, func(in []*Buffer) (*Buffer, error) { return ReduceMaxByColumn(in[0], r, c) })
	}
	for _, c := range [][3]int{{3, 1003, 36}, {2, 130, 33}} {
		batch, rows, cols := c[0], c[1], c[2]
		tag := fmt.Sprintf("%dx%dx%d/finite", batch, rows, cols)
		add("reduce_mean_axis/"+tag, []int{batch * rows * cols}, func(in []*Buffer) (*Buffer, error) {
			return ReduceMeanAxis(in[0], []int{batch, rows, cols}, 1)
		})
		add("reduce_sum_by_column_chunked/"+tag, []int{batch * rows * cols}, func(in []*Buffer) (*Buffer, error) {
			return sumByColChunkedOp.call1(batch*cols, in, nil, []int{batch, rows, cols}, float32(rows))
		})
		add("reduce_max_by_column_chunked/"+tag, []int{batch * rows * cols}, func(in []*Buffer) (*Buffer, error) {
			return maxByColChunkedOp.call1(batch*cols, in, nil, []int{batch, rows, cols})
		})
	}
	for _, sh := range [][2]int{{33, 257}, {17, 1025}, {3, 5000}} {
		r, c := sh[0], sh[1]
		tag := fmt.Sprintf("%dx%d/finite", r, c)
		add("softmax_bwd/"+tag, []int{r * c, r * c}, func(in []*Buffer) (*Buffer, error) { return SoftmaxBwd(in[0], in[1], r, c) })
		add("log_softmax_bwd/"+tag, []int{r * c, r * c}, func(in []*Buffer) (*Buffer, error) { return LogSoftmaxBwd(in[0], in[1], r, c) })
	}
	idx := mirrorIndices()
	for _, cols := range []int{1, 33} {
		rows, k := 4099, len(idx)
		tag := fmt.Sprintf("%dx%d", rows, cols)
		add("gather_rows/"+tag, []int{rows * cols}, func(in []*Buffer) (*Buffer, error) { return GatherRows(in[0], rows, cols, idx) })
		scatterIn := func(det bool) func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
			return func(_ *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				defer SetDeterministic(Deterministic())
				SetDeterministic(det)
				b, err := ScatterAddRows(in[0], in[1], rows, cols, idx)
				return []*Buffer{b}, err
			}
		}
		add("scatter_add_rows/"+tag, []int{rows * cols, k * cols}, func(in []*Buffer) (*Buffer, error) {
			outs, err := scatterIn(true)(nil, in, 0)
			return outs[0], err
		})
		// Fast mode: atomics add repeated rows in any order; within rounding of the sorted path.
		cases = append(cases, mirrorCase{name: "scatter_add_rows_atomic/" + tag, ins: 2, finite: true,
			lens: []int{rows * cols, k * cols}, sizes: []int{rows * cols}, run: scatterIn(false),
			tier: relTier(1e-5, scatterIn(true))})
	}
	return cases
}

// mirrorShapes are (rows, cols) shapes for the layout and axis kernels: empty axes, vectors,
// sizes off the 32x32 tiles and the 256-thread rows, and long rows and columns.
var mirrorShapes = [][2]int{{0, 5}, {5, 0}, {1, 1}, {1, 33}, {33, 1}, {17, 65}, {31, 257}, {256, 256}, {40, 128}, {33, 129}, {9, 1024},
	{1000, 1025}, {3, 100003}, {70000, 3}}

// specialShapes are the shapes whose shape cases also run with NaN and infinities in their
// inputs (elsewhere the inputs are finite, so that long reductions compare real sums rather
// than NaN); 7x2049 takes row_reduce's loop of ROW_LOADS loads and its tail.
var specialShapes = [][2]int{{17, 65}, {31, 257}, {7, 2049}}

func shapeCases() []mirrorCase {
	var cases []mirrorCase
	finite := true
	add := func(name string, lens []int, n int, run func(ins []*Buffer) (*Buffer, error)) {
		cases = append(cases, mirrorCase{name: name, ins: len(lens), finite: finite, lens: lens, sizes: []int{n},
			run: func(d *Device, ins []*Buffer, _ int) ([]*Buffer, error) {
				b, err := run(ins)
				return []*Buffer{b}, err
			}})
	}
	for k, sh := range append(slices.Clone(mirrorShapes), specialShapes...) {
		r, c := sh[0], sh[1]
		tag := fmt.Sprintf("%dx%d", r, c)
		if k >= len(mirrorShapes) {
			finite = false
			tag += "/special"
		}
		add("transpose2d/"+tag, []int{r * c}, r*c, func(in []*Buffer) (*Buffer, error) { return Transpose2d(in[0], r, c) })
		add("reduce_sum_by_row/"+tag, []int{r * c}, r*c, func(in []*Buffer) (*Buffer, error) { return ReduceSumByRow(in[0], r, c) })
		add("reduce_max_by_row/"+tag, []int{r * c}, r*c, func(in []*Buffer) (*Buffer, error) { return ReduceMaxByRow(in[0], r, c) })
		add("reduce_sum_by_column/"+tag, []int{r * c}, r*c, func(in []*Buffer) (*Buffer, error) { return ReduceSumByColumn(in[0], r, c) })
		add("reduce_max_by_column/"+tag, []int{r * c}, r*c, func(in []*Buffer) (*Buffer, error) { return ReduceMaxByColumn(in[0], r, c) })
		add("broadcast_vec_to_rows/"+tag, []int{c}, r*c, func(in []*Buffer) (*Buffer, error) { return BroadcastVecToRows(in[0], r, c) })
		add("broadcast_vec_to_cols/"+tag, []int{r}, r*c, func(in []*Buffer) (*Buffer, error) { return BroadcastVecToCols(in[0], r, c) })
		add("concat1d/"+tag, []int{r, c}, r+c, func(in []*Buffer) (*Buffer, error) { return Concat1d(in[0], in[1], r, c) })
		add("softmax/"+tag, []int{r * c}, r*c, func(in []*Buffer) (*Buffer, error) { return Softmax(in[0], r, c) })
		add("log_softmax/"+tag, []int{r * c}, r*c, func(in []*Buffer) (*Buffer, error) { return LogSoftmax(in[0], r, c) })
		add("softmax_bwd/"+tag, []int{r * c, r * c}, r*c, func(in []*Buffer) (*Buffer, error) { return SoftmaxBwd(in[0], in[1], r, c) })
		add("log_softmax_bwd/"+tag, []int{r * c, r * c}, r*c, func(in []*Buffer) (*Buffer, error) { return LogSoftmaxBwd(in[0], in[1], r, c) })
		add("masked_softmax/"+tag, []int{r * c}, r*c, func(in []*Buffer) (*Buffer, error) {
			mask, err := BernoulliMask(in[0].Device(), r*c, 0.7, 5)
			if err != nil {
				return nil, err
			}
			defer mask.Release()
			return MaskedSoftmax(in[0], mask, r, c)
		})
		add("slice1d/"+tag, []int{r + c}, r+c, func(in []*Buffer) (*Buffer, error) { return Slice1d(in[0], r+c, r/2, c) })
		if c == 0 {
			continue
		}
		if finite {
			cases = append(cases, layerNormCases(r, c, true)...)
		}
	}
	// The long-row forward kernels (softmax_fwd_long, log_softmax_fwd_long, and on sm_80+ their
	// *_long_async variants for rows of 3 or 4 groups whose length is a multiple of 4): blocks of
	// 1 to 4 groups of 256 threads, ragged and full register tiles, NaN/Inf rows, and each row also
	// through the other kernels that could compute it (softmaxRoutes); 270 rows make each async
	// block (one per multiprocessor) walk two or more rows.
	for _, sh := range [][3]int{{5, 4097, 1}, {4, 8192, 1}, {3, 8195, 1}, {2, 16387, 1}, {3, 32768, 1}, {3, 12345, 0},
		{3, 20000, 1}, {5, 24576, 1}, {3, 20000, 0}, {270, 16388, 1}} {
		r, c := sh[0], sh[1]
		finite = sh[2] == 1
		tag := fmt.Sprintf("%dx%d", r, c)
		if !finite {
			tag += "/special"
		}
		for _, route := range softmaxRoutes(c) {
			add("softmax/"+tag+route.tag, []int{r * c}, r*c, func(in []*Buffer) (*Buffer, error) {
				defer route.set()()
				return Softmax(in[0], r, c)
			})
			add("log_softmax/"+tag+route.tag, []int{r * c}, r*c, func(in []*Buffer) (*Buffer, error) {
				defer route.set()()
				return LogSoftmax(in[0], r, c)
			})
		}
	}
	// Rows of signed zeros and infinities (ties of the max), and rows whose sums show the order of
	// their additions in the bits of the outputs: values in (-4, 4), exps of similar size
	// (softmax); one partial's chain holding almost all of a sum near 1 (log-softmax).
	inputs := []struct {
		tag  string
		rows func(rows, cols int) []float32
	}{{"zeros", zeroTieRows}, {"narrow", narrowRows}, {"partial0", partial0Rows}}
	for _, sh := range [][2]int{{4, 9001}, {3, 20000}, {4, 32768}} {
		for _, in := range inputs {
			r, c, gen := sh[0], sh[1], in.rows
			for _, name := range []string{"softmax", "log_softmax"} {
				for _, route := range softmaxRoutes(c) {
					cases = append(cases, mirrorCase{name: fmt.Sprintf("%s/%dx%d/%s%s", name, r, c, in.tag, route.tag),
						sizes: []int{r * c},
						run: func(d *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
							x, err := FromFloat32(d, gen(r, c))
							if err != nil {
								return nil, err
							}
							defer x.Release()
							defer route.set()()
							var y *Buffer
							if name == "log_softmax" {
								y, err = LogSoftmax(x, r, c)
							} else {
								y, err = Softmax(x, r, c)
							}
							return []*Buffer{y}, err
						}})
				}
			}
		}
	}
	// The fused backward path (rows >= 4096, cols <= 4096), and NaN/Inf rows.
	for _, sh := range [][2]int{{4100, 1500}, {4097, 300}} {
		cases = append(cases, layerNormCases(sh[0], sh[1], true)...)
	}
	return append(cases, layerNormCases(17, 65, false)...)
}

// narrowRows is a (rows, cols) input of values in (-4, 4).
func narrowRows(rows, cols int) []float32 {
	x := make([]float32, rows*cols)
	for i := range x {
		z := cpu.SplitMix64(uint64(i) ^ 0xa11ce)
		x[i] = float32(int32(z>>32)) * 0x1p-29
	}
	return x
}

// partial0Rows is a (rows, cols) input whose row sums of exp(x - max) are dominated by partial 0
// (columns c = 0 mod 256) and near 1: x = 0 at column 0, about -7 at the other columns of
// partial 0, -40 elsewhere. log(s) then changes with every last bit of s.
func partial0Rows(rows, cols int) []float32 {
	x := make([]float32, rows*cols)
	for i := range x {
		c := i % cols
		switch {
		case c == 0:
			x[i] = 0
		case c%256 == 0:
			z := cpu.SplitMix64(uint64(i) ^ 0xd0)
			x[i] = -7 + float32(int32(z>>32))*0x1p-31
		default:
			x[i] = -40
		}
	}
	return x
}

// zeroTieRows is a (rows, cols) input without NaN whose row maxima are ties: row 0 holds +0 and
// -0 among negative values, row 1 also -Inf, row 2 +Inf twice among finite values, row 3 only
// -Inf and -0 (other rows repeat the pattern).
func zeroTieRows(rows, cols int) []float32 {
	x := make([]float32, rows*cols)
	negZero, inf := float32(math.Copysign(0, -1)), float32(math.Inf(1))
	for i := range x {
		r, c := i/cols, i%cols
		z := cpu.SplitMix64(uint64(i) ^ 0x5eed)
		v := -float32(uint32(z>>40)) * 0x1p-20 // -16 < v <= 0
		switch r % 4 {
		case 0, 1:
			switch z % 16 {
			case 0:
				v = 0
			case 1:
				v = negZero
			case 2:
				if r%4 == 1 {
					v = -inf
				}
			}
		case 2:
			if c == cols/3 || c == cols-1 {
				v = inf
			}
		case 3:
			v = -inf
			if z%64 == 0 {
				v = negZero
			}
		}
		x[i] = v
	}
	return x
}

// layerNormCases are the forward and backward layer-norm cases of a (rows, cols) shape; the
// backward takes dOut, x and gamma, and mean and sd from the forward on the same device. With
// finite false, the inputs hold NaN and infinities (special rows come out NaN).
func layerNormCases(r, c int, finite bool) []mirrorCase {
	tag := fmt.Sprintf("%dx%d", r, c)
	if !finite {
		tag += "/special"
	}
	fwd := mirrorCase{name: "layer_norm_fwd/" + tag, ins: 3, finite: finite, lens: []int{r * c, c, c}, sizes: []int{r * c},
		run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
			o, m, s, err := LayerNormFwd(in[0], in[1], in[2], r, c, LayerNormEps)
			return []*Buffer{o, m, s}, err
		}}
	bwd := mirrorCase{name: "layer_norm_bwd/" + tag, ins: 3, finite: finite, lens: []int{r * c, r * c, c}, sizes: []int{r * c},
		run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
			beta, err := Zeros(d, c)
			if err != nil {
				return nil, err
			}
			o, m, s, err := LayerNormFwd(in[1], in[2], beta, r, c, LayerNormEps)
			ReleaseThen(nil, beta, o)
			if err != nil {
				return nil, err
			}
			defer ReleaseThen(nil, m, s)
			dx, dg, db, err := LayerNormBwd(in[0], in[1], m, s, in[2], r, c)
			return []*Buffer{dx, dg, db}, err
		}}
	return []mirrorCase{fwd, bwd}
}

var specials = []float32{
	float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
	1, -1, 0.5, 1e-40, -1e-40, 88.72, -88.72, 89, -104, 100, -100, 3.4e38, -3.4e38, 1e-7, 20, -20, 0.3, 2, -0.5,
}

// mirrorInput is input k of a case: signed values with magnitudes from 2^-20 to 2^10, every
// eighth element (on average) a special value unless finite; input 1 repeats input 0 at about one
// element in eight so that binary ops see ties.
func mirrorInput(n, k int, finite bool, first []float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		z := cpu.SplitMix64(uint64(k)<<40 ^ uint64(i))
		u := float32(uint32(z>>32)) * 0x1p-32
		v := float32(math.Ldexp(float64(u), int(z%31)-20))
		if z&(1<<20) != 0 {
			v = -v
		}
		switch {
		case !finite && z>>21%8 == 0:
			v = specials[(z>>24)%uint64(len(specials))]
		case k == 1 && first != nil && z>>21%8 == 1:
			v = first[i]
		}
		out[i] = v
	}
	return out
}

// canonical returns the bits with every NaN replaced by one pattern: NaNs compare by class only
// (a GPU canonicalizes NaN payloads, x86 propagates them).
func canonical(x []float32) []uint32 {
	out := make([]uint32, len(x))
	for i, v := range x {
		if v != v {
			out[i] = 0x7fc00000
		} else {
			out[i] = math.Float32bits(v)
		}
	}
	return out
}

func hashOf(x []float32) string {
	h := sha256.New()
	for _, b := range canonical(x) {
		h.Write([]byte{byte(b), byte(b >> 8), byte(b >> 16), byte(b >> 24)})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// runCase runs one case on d and returns the downloaded outputs; it checks that the inputs are
// unchanged and, on a guarded CUDA device, the guard bands.
// cpuCase is runCase on the CPU, which must hold no more live bytes afterwards (a leak raises
// them; a finalizer of an earlier test's buffer may lower them).
func cpuCase(t *testing.T, c mirrorCase, n int, host [][]float32) [][]float32 {
	t.Helper()
	base := CPU().Stats().LiveBytes
	outs := runCase(t, CPU(), c, n, host)
	if live := CPU().Stats().LiveBytes; live > base {
		t.Errorf("%s n=%d: CPU live bytes %d after the case, %d before", c.name, n, live, base)
	}
	return outs
}

func runCase(t *testing.T, d *Device, c mirrorCase, n int, host [][]float32) [][]float32 {
	t.Helper()
	ins := make([]*Buffer, len(host))
	for k, h := range host {
		b, err := FromFloat32(d, h)
		if err != nil {
			t.Fatal(err)
		}
		ins[k] = b
	}
	outs, err := c.run(d, ins, n)
	if err != nil {
		t.Fatalf("%s n=%d on %s: %v", c.name, n, d, err)
	}
	var res [][]float32
	for _, o := range outs {
		f, err := o.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, f)
		if g, ok := d.be.(*cudaBackend); ok && o.n > 0 {
			if err := g.checkGuards(o.mem, o.n); err != nil {
				t.Errorf("%s n=%d: output %v", c.name, n, err)
			}
		}
		o.Release()
	}
	for k, b := range ins {
		f, err := b.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(canonical(f), canonical(host[k])) {
			t.Errorf("%s n=%d on %s: input %d changed", c.name, n, d, k)
		}
		b.Release()
	}
	return res
}

// goldenPath is the committed record of GPU output hashes.
const goldenPath = "testdata/mirror-golden.txt"

// pendingPath holds the CPU hashes of exact mirror cases that no GPU run has hashed yet (kernels
// added while no GPU was available): they are NOT GPU-verified. TestMirrorGolden checks them
// against the CPU (so the CPU twin cannot drift meanwhile) and reports how many wait; the next
// GPU run (GPU_CHECK_GOLDEN=1) writes their GPU hashes into the golden file, and the rows then
// leave this file (TestMirrorPendingStale fails while a key is in both).
const pendingPath = "testdata/mirror-pending.txt"

func readGolden(t *testing.T) map[string]string { return readHashes(t, goldenPath) }

// readPending returns the pending hashes (none when the file does not exist).
func readPending(t *testing.T) map[string]string {
	if _, err := os.Stat(pendingPath); err != nil {
		return map[string]string{}
	}
	return readHashes(t, pendingPath)
}

// readHashes reads a file of "key hash" lines ('#' starts a comment line).
func readHashes(t *testing.T, path string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (write it from a GPU run: see README.md)", err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && !strings.HasPrefix(fields[0], "#") {
			m[fields[0]] = fields[1]
		}
	}
	return m
}

// mirrorKey names output out of case c at size n in the golden file (no spaces: "[3 1]" is
// written "[3,1]").
func mirrorKey(c mirrorCase, n, out int) string {
	return strings.ReplaceAll(fmt.Sprintf("%s/n=%d/out=%d", c.name, n, out), " ", ",")
}

// TestMirrorGolden (CPU) recomputes every mirror case on the CPU and compares with the hashes
// recorded on the GPU.
func TestMirrorGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	golden, pending := readGolden(t), readPending(t)
	waiting := map[string]bool{}
	write := os.Getenv("TORCHLEAN_WRITE_PENDING") == "1"
	var newPending []string
	for _, c := range mirrorCases() {
		for _, n := range c.sizes {
			host := mirrorInputs(c, n)
			if !c.tier.exact() {
				checkRel(t, CPU(), c, n, host, cpuCase(t, c, n, host))
				continue
			}
			for k, out := range cpuCase(t, c, n, host) {
				key := mirrorKey(c, n, k)
				got := hashOf(out)
				if want, ok := golden[key]; ok {
					if got != want {
						t.Errorf("%s: CPU hash %s, GPU recorded %s", key, got, want)
					}
				} else if want, ok := pending[key]; ok {
					waiting[strings.SplitN(key, "/", 2)[0]] = true
					if got != want {
						t.Errorf("%s: CPU hash %s, %s has %s (pending a GPU run)", key, got, pendingPath, want)
					}
				} else if write {
					newPending = append(newPending, key+" "+got)
				} else {
					t.Errorf("%s: no GPU hash recorded (regenerate %s on a GPU, or, with no GPU at hand, "+
						"TORCHLEAN_WRITE_PENDING=1 go test -run TestMirrorGolden records the CPU's in %s)", key, goldenPath, pendingPath)
				}
			}
		}
	}
	if write && len(newPending) > 0 {
		for k, h := range pending {
			newPending = append(newPending, k+" "+h)
		}
		slices.Sort(newPending)
		text := "# CPU hashes of exact mirror cases that no GPU run has hashed yet: NOT GPU-verified (see pendingPath in\n" +
			"# ops/mirror_test.go). The next GPU run with GPU_CHECK_GOLDEN=1 hashes them into mirror-golden.txt; then delete them here.\n" +
			strings.Join(newPending, "\n") + "\n"
		if err := os.WriteFile(pendingPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d pending hashes to %s", len(newPending), pendingPath)
	}
	if len(waiting) > 0 {
		t.Logf("not GPU-verified yet (%s): %s", pendingPath, strings.Join(slices.Sorted(maps.Keys(waiting)), ", "))
	}
}

// TestMirrorPendingStale: a key the GPU has hashed leaves the pending file.
func TestMirrorPendingStale(t *testing.T) {
	golden := readGolden(t)
	for key := range readPending(t) {
		if _, ok := golden[key]; ok {
			t.Errorf("%s is in %s and in %s: delete it from the pending file", key, goldenPath, pendingPath)
		}
	}
}

func mirrorInputs(c mirrorCase, n int) [][]float32 {
	host := make([][]float32, c.ins)
	for k := range host {
		var first []float32
		if k > 0 && c.lens == nil {
			first = host[0]
		}
		m := n
		if c.lens != nil {
			m = c.lens[k]
		}
		host[k] = mirrorInput(m, k, c.finite, first)
	}
	return host
}

// softmaxRoute is a way for a softmax row to reach its kernel: set switches the choice and
// returns the function that restores it.
type softmaxRoute struct {
	tag string
	set func() (restore func())
}

// softmaxRoutes returns the routes of a row of cols elements: the default one (tag ""), and for
// rows the default gives a *_long kernel also "/short" (the 256-thread kernel) and, where the
// device would pick *_long_async (3 or 4 groups, cols % 4 == 0), "/long" (*_long).
func softmaxRoutes(cols int) []softmaxRoute {
	routes := []softmaxRoute{{"", func() func() { return func() {} }}}
	if cols <= softmaxShortCols || cols > softmaxLongCols {
		return routes
	}
	routes = append(routes, softmaxRoute{"/short", func() func() {
		softmaxLong = false
		return func() { softmaxLong = true }
	}})
	if cols%4 == 0 && cols > 2*256*softmaxLongPerThread {
		routes = append(routes, softmaxRoute{"/long", func() func() {
			softmaxAsync = false
			return func() { softmaxAsync = true }
		}})
	}
	return routes
}

// guardedCUDA opens a second handle on CUDA device 0 whose allocations carry guard bands; its
// commands go through a launch queue when the device's do.
func guardedCUDA(t *testing.T) *Device {
	t.Helper()
	d, err := Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	return handleOn(t, d, " (guarded)", 64, d.be.(*cudaBackend).queue != nil)
}

// TestMirror (GPU) runs every case on both backends and requires identical bits. Cases whose
// names match the regular expression $TORCHLEAN_MIRROR_SKIP, or do not match
// $TORCHLEAN_MIRROR_ONLY, are left out (for slow tools such as compute-sanitizer's racecheck);
// the golden file is then not written.
func TestMirror(t *testing.T) {
	gpu := guardedCUDA(t)
	var skip, only *regexp.Regexp
	if s := os.Getenv("TORCHLEAN_MIRROR_SKIP"); s != "" {
		skip = regexp.MustCompile(s)
	}
	if s := os.Getenv("TORCHLEAN_MIRROR_ONLY"); s != "" {
		only = regexp.MustCompile(s)
	}
	var golden []string
	for _, c := range mirrorCases() {
		if (skip != nil && skip.MatchString(c.name)) || (only != nil && !only.MatchString(c.name)) {
			t.Logf("%s: skipped (TORCHLEAN_MIRROR_SKIP / _ONLY)", c.name)
			continue
		}
		for _, n := range c.sizes {
			host := mirrorInputs(c, n)
			base := gpu.Stats().LiveBytes
			want := cpuCase(t, c, n, host)
			got := runCase(t, gpu, c, n, host)
			if !c.tier.exact() {
				checkRel(t, CPU(), c, n, host, want)
				checkRel(t, gpu, c, n, host, got)
			}
			if err := gpu.Sync(); err != nil {
				t.Fatalf("%s n=%d: %v", c.name, n, err)
			}
			if live := gpu.Stats().LiveBytes; live != base {
				t.Errorf("%s n=%d: live bytes %d after the case, %d before", c.name, n, live, base)
			}
			if !c.tier.exact() {
				continue
			}
			for k := range want {
				wb, gb := canonical(want[k]), canonical(got[k])
				if i := firstDiff(wb, gb); i >= 0 {
					t.Errorf("%s n=%d out %d: first difference at %d: cpu %#08x (%g) gpu %#08x (%g) (inputs %v)",
						c.name, n, k, i, wb[i], want[k][i], gb[i], got[k][i], inputsAt(host, i))
				}
				golden = append(golden, mirrorKey(c, n, k)+" "+hashOf(got[k]))
			}
		}
	}
	if dir := os.Getenv("TORCHLEAN_GOLDEN_OUT"); dir != "" && skip == nil && only == nil {
		text := "# GPU output hashes of the mirror test (ops/mirror_test.go); written by a GPU run.\n" + strings.Join(golden, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "mirror-golden.txt"), []byte(text), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// checkRel checks the outputs got of a Rel case on d against its exact path run on d.
func checkRel(t *testing.T, d *Device, c mirrorCase, n int, host [][]float32, got [][]float32) {
	t.Helper()
	ref := c
	ref.run, ref.tier = c.tier.ref, tier{}
	want := runCase(t, d, ref, n, host)
	for k := range want {
		if i := c.tier.within(got[k], want[k]); i >= 0 {
			t.Errorf("%s n=%d on %s, out %d: element %d is %g, the exact path %g (tolerance %g)",
				c.name, n, d, k, i, got[k][i], want[k][i], c.tier.rel)
		}
	}
}

func firstDiff(a, b []uint32) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func inputsAt(host [][]float32, i int) []float32 {
	var v []float32
	for _, h := range host {
		if i < len(h) {
			v = append(v, h[i])
		}
	}
	return v
}
