package ops

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
)

// selectShapes are the (rows, cols) shapes of the select family's mirror cases: empty matrices,
// many short rows (sort_rows' groups of rows), rows around the warp and block widths, rows of
// exactly SortTile and one past it (the tile and merge path), a ragged long row of several tiles
// and one of 100003 elements (six merge passes).
var selectShapes = [][2]int{{0, 7}, {3, 0}, {1000, 1}, {70000, 3}, {300, 31}, {100, 32}, {100, 33}, {20, 255},
	{20, 256}, {20, 257}, {3, 2048}, {3, 2049}, {5, 4099}, {1, 100003}}

// tieRows returns rows*cols values drawn from a few: NaN (both signs), ±Inf, ±0, ±1 and 2, so
// that almost every value ties with others of its row.
func tieRows(rows, cols int) []float32 {
	few := []float32{float32(math.NaN()), math.Float32frombits(0xffc00001), float32(math.Inf(1)),
		float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1, -1, 2}
	out := make([]float32, rows*cols)
	for i := range out {
		out[i] = few[cpu.SplitMix64(uint64(i)^0x71e5)%uint64(len(few))]
	}
	return out
}

// weightRows returns rows*cols multinomial weights: positive, spread over 2^-10 .. 2^10, with
// one zero in eight (the first zeros columns of row 0 when zeros > 0, so a case can leave
// exactly as many positive weights as it draws).
func weightRows(rows, cols int) []float32 {
	out := make([]float32, rows*cols)
	for i := range out {
		z := cpu.SplitMix64(uint64(i) ^ 0xa11ce)
		if z%8 != 0 {
			out[i] = float32(math.Ldexp(0.5+float64(uint32(z>>32))*0x1p-33, int(z>>8%21)-10))
		}
	}
	return out
}

// indicesAsFloats downloads ix's host copy as float32 values (exact below 2^24) in a buffer on
// d, and releases ix.
func indicesAsFloats(d *Device, ix *Indices) (*Buffer, error) {
	defer ix.Release()
	v, err := ix.Ints()
	if err != nil {
		return nil, err
	}
	f := make([]float32, len(v))
	for i, c := range v {
		f[i] = float32(c)
	}
	return FromFloat32(d, f)
}

// twoOuts returns a value buffer and the float form of its indices (releasing both on error).
func twoOuts(d *Device, vals *Buffer, ix *Indices, err error) ([]*Buffer, error) {
	if err != nil {
		return nil, err
	}
	f, err := indicesAsFloats(d, ix)
	if err != nil {
		vals.Release()
		return nil, err
	}
	return []*Buffer{vals, f}, nil
}

// coprime returns a multiplier coprime to n (n >= 1).
func coprime(n int) int {
	gcd := func(a, b int) int {
		for b != 0 {
			a, b = b, a%b
		}
		return a
	}
	for _, a := range []int{7919, 7907, 7901, 7883} {
		if gcd(a, n) == 1 {
			return a
		}
	}
	return 1
}

// selectCases are the mirror cases of the select family: sorts (ascending, descending, on the
// mirror inputs with NaN, ±Inf and ±0, and on rows of ties), top-k, the gradient scatter and
// multinomial sampling with and without replacement. Index outputs are hashed as floats.
func selectCases() []mirrorCase {
	var cases []mirrorCase
	for _, sh := range selectShapes {
		rows, cols := sh[0], sh[1]
		for _, desc := range []bool{false, true} {
			tag := fmt.Sprintf("%dx%d/asc", rows, cols)
			if desc {
				tag = fmt.Sprintf("%dx%d/desc", rows, cols)
			}
			cases = append(cases, mirrorCase{name: "sort_rows/" + tag, ins: 1, lens: []int{rows * cols}, sizes: []int{rows * cols},
				run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
					vals, ix, err := SortRows(in[0], rows, cols, desc)
					return twoOuts(d, vals, ix, err)
				}},
				mirrorCase{name: "sort_rows/ties/" + tag, sizes: []int{rows * cols},
					run: func(d *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
						x, err := FromFloat32(d, tieRows(rows, cols))
						if err != nil {
							return nil, err
						}
						defer x.Release()
						vals, ix, err := SortRows(x, rows, cols, desc)
						return twoOuts(d, vals, ix, err)
					}})
		}
	}
	for _, c := range []struct{ rows, cols, k int }{{300, 31, 5}, {20, 257, 257}, {70000, 3, 1}, {3, 2049, 0}, {5, 4099, 100},
		{1, 100003, 10}} {
		for _, largest := range []bool{true, false} {
			tag := fmt.Sprintf("%dx%d/k=%d/largest=%v", c.rows, c.cols, c.k, largest)
			cases = append(cases, mirrorCase{name: "topk/" + tag, ins: 1, lens: []int{c.rows * c.cols}, sizes: []int{c.rows * c.cols},
				run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
					vals, ix, err := TopK(in[0], c.rows, c.cols, c.k, largest)
					return twoOuts(d, vals, ix, err)
				}})
		}
	}
	// The gradient scatter, with the columns c_j = (j*a + r) % cols of a multiplier a coprime to
	// cols (distinct, as a sort's): whole permutations and top-k subsets.
	for _, c := range []struct{ rows, cols, k int }{{1000, 1, 1}, {100, 33, 33}, {20, 257, 7}, {5, 4099, 4099}, {1, 100003, 1000}} {
		a := coprime(c.cols)
		idx := make([]int, c.rows*c.k)
		for r := range c.rows {
			for j := range c.k {
				idx[r*c.k+j] = (j*a + r) % c.cols
			}
		}
		cases = append(cases, mirrorCase{name: fmt.Sprintf("sort_rows_bwd/%dx%d/k=%d", c.rows, c.cols, c.k), ins: 1,
			lens: []int{c.rows * c.k}, sizes: []int{c.rows * c.cols},
			run: func(d *Device, in []*Buffer, _ int) ([]*Buffer, error) {
				ix, err := NewIndices(d, idx)
				if err != nil {
					return nil, err
				}
				defer ix.Release()
				b, err := SortRowsBwd(in[0], ix, c.rows, c.cols, c.k)
				return []*Buffer{b}, err
			}})
	}
	// Multinomial draws; the last case of each kind draws every positive weight of its rows.
	const key = 0x0123456789abcdef
	for _, c := range []struct {
		rows, cols, samples int
		replacement         bool
	}{{1000, 1, 3, true}, {300, 31, 20, true}, {20, 257, 1000, true}, {1, 100003, 4099, true},
		{1000, 1, 1, false}, {300, 31, 3, false}, {20, 2049, 100, false}, {1, 100003, 1000, false}, {1, 4099, 0, false}} {
		tag := fmt.Sprintf("%dx%d/samples=%d/replacement=%v", c.rows, c.cols, c.samples, c.replacement)
		w := weightRows(c.rows, c.cols)
		if c.rows == 1000 && c.cols == 1 {
			for i := range w {
				w[i] = float32(i%7 + 1) // a single column must be positive
			}
		}
		cases = append(cases, mirrorCase{name: "multinomial/" + tag, sizes: []int{c.rows * c.samples},
			run: func(d *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
				p, err := FromFloat32(d, w)
				if err != nil {
					return nil, err
				}
				defer p.Release()
				ix, err := Multinomial(p, c.rows, c.cols, c.samples, c.replacement, key)
				if err != nil {
					return nil, err
				}
				b, err := indicesAsFloats(d, ix)
				return []*Buffer{b}, err
			}})
	}
	return cases
}

// TestSelectMirror (GPU) is TestMirror for the select family's cases alone (a short run while
// working on its kernels): identical bits on both backends, guard bands and inputs intact, live
// bytes back to their baseline. With $TORCHLEAN_GOLDEN_OUT set it writes the cases' golden
// lines to select-golden.txt there, to merge into testdata/mirror-golden.txt.
func TestSelectMirror(t *testing.T) {
	gpu := guardedCUDA(t)
	var golden []string
	for _, c := range selectCases() {
		for _, n := range c.sizes {
			host := mirrorInputs(c, n)
			base := gpu.Stats().LiveBytes
			want := cpuCase(t, c, n, host)
			got := runCase(t, gpu, c, n, host)
			if err := gpu.Sync(); err != nil {
				t.Fatalf("%s n=%d: %v", c.name, n, err)
			}
			if live := gpu.Stats().LiveBytes; live != base {
				t.Errorf("%s n=%d: live bytes %d after the case, %d before", c.name, n, live, base)
			}
			for k := range want {
				if i := firstDiff(canonical(want[k]), canonical(got[k])); i >= 0 {
					t.Errorf("%s n=%d out %d: first difference at %d: cpu %g gpu %g", c.name, n, k, i, want[k][i], got[k][i])
				}
				golden = append(golden, mirrorKey(c, n, k)+" "+hashOf(got[k]))
			}
		}
	}
	if dir := os.Getenv("TORCHLEAN_GOLDEN_OUT"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "select-golden.txt"), []byte(strings.Join(golden, "\n")+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
}
