package ops

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/driver"
	"github.com/torchlean-go/torchlean/internal/testenv"
)

func TestSelectDevice(t *testing.T) {
	never := func(int) (*Device, error) { t.Fatal("CUDA opened although TORCHLEAN_DEVICE=cpu"); return nil, nil }
	if s := selectDevice("cpu", never); s.Device != CPU() || s.Reason != "TORCHLEAN_DEVICE=cpu" {
		t.Errorf("forced cpu: %+v", s)
	}
	_, noLib := driver.LoadFrom("/nonexistent/libcuda.so.1")
	if !errors.Is(noLib, driver.ErrNoLibrary) {
		t.Fatalf("LoadFrom of a missing file: %v", noLib)
	}
	for _, c := range []struct {
		err    error
		reason string
	}{
		{noLib, "no CUDA library"},
		{fmt.Errorf("cuInit: %w", driver.ErrNoDevice), "no CUDA device"},
		{fmt.Errorf("%w: driver reports 11.4", driver.ErrDriverTooOld), "CUDA driver too old"},
		{fmt.Errorf("%w: cuInit in libc.so.6", driver.ErrMissingSymbol), "CUDA unusable"},
	} {
		s := selectDevice("", func(int) (*Device, error) { return nil, c.err })
		if s.Device != CPU() || s.Reason != c.reason || s.Err == nil {
			t.Errorf("%v: got %+v, want reason %q", c.err, s, c.reason)
		}
	}
	var asked int
	selectDevice("cuda:3", func(n int) (*Device, error) { asked = n; return nil, noLib })
	if asked != 3 {
		t.Errorf("cuda:3 opened device %d", asked)
	}
}

// TestDefaultOnThisMachine checks the real selection: on a machine without libcuda the reason is
// "no CUDA library"; with Debian's libcuda1 but no GPU, "no CUDA device"; with a GPU, CUDA.
func TestDefaultOnThisMachine(t *testing.T) {
	s := DefaultSelection()
	t.Logf("default device %s (reason %q, err %v)", s.Device, s.Reason, s.Err)
	if os.Getenv("TORCHLEAN_DEVICE") != "" {
		return
	}
	_, err := driver.Load()
	switch {
	case err == nil:
		if s.Device.Kind() != KindCUDA && s.Reason != "CUDA driver too old" {
			t.Errorf("libcuda loads and a device exists, but the default is %s (%s)", s.Device, s.Reason)
		}
	case errors.Is(err, driver.ErrNoLibrary):
		if s.Reason != "no CUDA library" {
			t.Errorf("no libcuda: reason %q", s.Reason)
		}
	case errors.Is(err, driver.ErrNoDevice):
		if s.Reason != "no CUDA device" {
			t.Errorf("libcuda without a device: reason %q", s.Reason)
		}
	}
}

// TestParseDevice checks the device names of Open and TORCHLEAN_DEVICE.
func TestParseDevice(t *testing.T) {
	for name, want := range map[string]int{"cpu": cpuOrdinal, " CPU ": cpuOrdinal, "cuda": 0, "cuda:0": 0,
		"cuda:12": 12, "": autoOrdinal, "auto": autoOrdinal} {
		if got, err := parseDevice(name); err != nil || got != want {
			t.Errorf("parseDevice(%q) = %d, %v; want %d", name, got, err, want)
		}
	}
	for _, name := range []string{"bogus", "cuda:", "cuda:1abc", "cuda:-1", "cuda:+1", "cuda: 1", "gpu", "cuda:99999999999999999999"} {
		if _, err := parseDevice(name); err == nil {
			t.Errorf("parseDevice(%q): no error", name)
		}
		if _, err := Open(name); err == nil {
			t.Errorf("Open(%q): no error", name)
		}
		never := func(int) (*Device, error) { t.Fatalf("%q opened CUDA", name); return nil, nil }
		if s := selectDevice(name, never); s.Device != CPU() || s.Err == nil || s.Reason != fmt.Sprintf("bad TORCHLEAN_DEVICE %q", name) {
			t.Errorf("TORCHLEAN_DEVICE=%q: %+v", name, s)
		}
	}
}

// The tests below are those of the select family (select.go): row sorts, top-k, their gradient
// scatter and multinomial sampling. (TestSelectDevice above tests the selection of the default
// device.)

// refSort is an independent reference of SortRows for one row: a stable sort by value with NaN
// largest and -0 == +0; it returns the sorted columns.
func refSort(row []float32, desc bool) []int {
	cols := make([]int, len(row))
	for i := range cols {
		cols[i] = i
	}
	// less reports whether a sorts before b: NaN is the largest, ±0 compare equal.
	less := func(a, b float32) bool {
		switch {
		case a != a:
			return false
		case b != b:
			return true
		}
		return a < b
	}
	slices.SortStableFunc(cols, func(i, j int) int {
		a, b := row[i], row[j]
		if desc {
			a, b = b, a
		}
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	return cols
}

// TestSortRowsReference compares SortRows, ArgsortRows and TopK with the reference on rows with
// ties, NaN of both signs, ±Inf and ±0, short and long (the tile and merge path).
func TestSortRowsReference(t *testing.T) {
	d := CPU()
	for _, sh := range [][2]int{{1, 1}, {7, 5}, {40, 33}, {3, 2048}, {2, 2049}, {1, 9000}} {
		rows, cols := sh[0], sh[1]
		for _, in := range []struct {
			tag  string
			host []float32
		}{{"ties", tieRows(rows, cols)}, {"mirror", mirrorInput(rows*cols, 0, false, nil)}} {
			x, err := FromFloat32(d, in.host)
			if err != nil {
				t.Fatal(err)
			}
			for _, desc := range []bool{false, true} {
				vals, ix, err := SortRows(x, rows, cols, desc)
				if err != nil {
					t.Fatal(err)
				}
				v, _ := vals.Float32s()
				got, err := ix.Ints()
				if err != nil {
					t.Fatal(err)
				}
				arg, err := ArgsortRows(x, rows, cols, desc)
				if err != nil {
					t.Fatal(err)
				}
				argInts, _ := arg.Ints()
				k := cols / 3
				tv, tix, err := TopK(x, rows, cols, k, desc)
				if err != nil {
					t.Fatal(err)
				}
				topv, _ := tv.Float32s()
				topi, _ := tix.Ints()
				for r := range rows {
					row := in.host[r*cols : (r+1)*cols]
					want := refSort(row, desc)
					for j, c := range want {
						if got[r*cols+j] != c || math.Float32bits(v[r*cols+j]) != math.Float32bits(row[c]) || argInts[r*cols+j] != c {
							t.Fatalf("%dx%d %s desc=%v: row %d position %d: column %d value %v (argsort %d), want column %d value %v",
								rows, cols, in.tag, desc, r, j, got[r*cols+j], v[r*cols+j], argInts[r*cols+j], c, row[c])
						}
						if j < k && (topi[r*k+j] != c || math.Float32bits(topv[r*k+j]) != math.Float32bits(row[c])) {
							t.Fatalf("%dx%d %s largest=%v: top-%d row %d position %d: column %d, want %d",
								rows, cols, in.tag, desc, k, r, j, topi[r*k+j], c)
						}
					}
				}
				vals.Release()
				ix.Release()
				arg.Release()
				tv.Release()
				tix.Release()
			}
			x.Release()
		}
	}
}

// TestSortRowsSpecials pins the order of special values, as PyTorch's sort gives it.
func TestSortRowsSpecials(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	x, err := FromFloat32(CPU(), []float32{1, nan, -inf, 0, negZero, inf, -2, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	for _, c := range []struct {
		desc bool
		want []int
	}{{false, []int{2, 6, 3, 4, 8, 0, 7, 5, 1}}, {true, []int{1, 5, 0, 7, 3, 4, 8, 6, 2}}} {
		ix, err := ArgsortRows(x, 1, 9, c.desc)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := ix.Ints(); !slices.Equal(got, c.want) {
			t.Errorf("descending=%v: %v, want %v", c.desc, got, c.want)
		}
		ix.Release()
	}
}

func TestSelectErrors(t *testing.T) {
	d := CPU()
	x, _ := FromFloat32(d, make([]float32, 6))
	defer x.Release()
	g, _ := FromFloat32(d, make([]float32, 4))
	defer g.Release()
	dup, _ := NewIndices(d, []int{0, 2, 1, 1})
	defer dup.Release()
	far, _ := NewIndices(d, []int{0, 2, 1, 3})
	defer far.Release()
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(TopK(x, 2, 3, 4, true)), "ops: topk: k = 4 is outside [0, 3] (rows of 3 elements)"},
		{second(TopK(x, 2, 3, -1, true)), "ops: topk: k = -1 is outside [0, 3] (rows of 3 elements)"},
		{second(SortRows(x, 2, 4, false)), "ops: sort_rows: x, a (2, 4) matrix, has 6 elements, want 8"},
		{only(SortRowsBwd(g, dup, 2, 3, 2)), "ops: sort_rows_bwd: column 1 repeats in row 1 of the indices (position 1)"},
		{only(SortRowsBwd(g, far, 2, 3, 2)), "ops: sort_rows_bwd: column 3 at position 1 of row 1 is outside [0, 3)"},
		{only(SortRowsBwd(g, far, 2, 1, 2)), "ops: sort_rows_bwd: k = 2 is outside [0, 1]"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("error %v, want %q", c.err, c.want)
		}
	}
}

// second returns the error of a call with two results and releases what it returned.
func second[A, B interface{ Release() bool }](a A, b B, err error) error {
	if err == nil {
		a.Release()
		b.Release()
	}
	return err
}

// only returns the error of a call with one result and releases what it returned.
func only(b *Buffer, err error) error {
	b.Release()
	return err
}

func TestSortRowsBwd(t *testing.T) {
	d := CPU()
	g, _ := FromFloat32(d, []float32{10, 20, 30, 40})
	defer g.Release()
	ix, _ := NewIndices(d, []int{2, 0, 1, 2})
	defer ix.Release()
	dx, err := SortRowsBwd(g, ix, 2, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer dx.Release()
	if got, _ := dx.Float32s(); !slices.Equal(got, []float32{20, 0, 10, 0, 30, 40}) {
		t.Errorf("dx = %v", got)
	}
}

// TestMultinomialDistribution checks the draws' frequencies: with replacement, each column's
// share of 200000 draws is within 5 standard deviations of its probability; without
// replacement, the draws of a row are distinct and positive-weight, the first draw follows the
// probabilities, and drawing as many as there are positive weights returns all of them.
func TestMultinomialDistribution(t *testing.T) {
	d := CPU()
	w := []float32{1, 0, 3, 0.5, 0, 2.5, 3} // sum 10
	const rows, draws = 1000, 200
	p := make([]float32, 0, rows*len(w))
	for range rows {
		p = append(p, w...)
	}
	probs, _ := FromFloat32(d, p)
	defer probs.Release()
	freq := func(v []int, stride, take int) []float64 {
		f := make([]float64, len(w))
		for i, c := range v {
			if i%stride < take {
				f[c]++
			}
		}
		return f
	}
	check := func(tag string, f []float64, total float64) {
		for c, wc := range w {
			pc := float64(wc) / 10
			if sd := math.Sqrt(total * pc * (1 - pc)); math.Abs(f[c]-total*pc) > 5*sd+1e-9 {
				t.Errorf("%s: column %d drawn %v times of %v, expected %v (sd %.1f)", tag, c, f[c], total, total*pc, sd)
			}
		}
	}
	ix, err := Multinomial(probs, rows, len(w), draws, true, KeyOf(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := ix.Ints()
	ix.Release()
	check("with replacement", freq(v, draws, draws), rows*draws)

	ix, err = Multinomial(probs, rows, len(w), 3, false, KeyOf(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	v, _ = ix.Ints()
	ix.Release()
	for r := range rows {
		s := v[3*r : 3*r+3]
		if s[0] == s[1] || s[0] == s[2] || s[1] == s[2] || w[s[0]] == 0 || w[s[1]] == 0 || w[s[2]] == 0 {
			t.Fatalf("row %d: draws %v without replacement repeat or take a zero weight", r, s)
		}
	}
	check("first draw without replacement", freq(v, 3, 1), rows)

	ix, err = Multinomial(probs, rows, len(w), 5, false, KeyOf(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	v, _ = ix.Ints()
	ix.Release()
	for r := range rows {
		s := slices.Clone(v[5*r : 5*r+5])
		slices.Sort(s)
		if !slices.Equal(s, []int{0, 2, 3, 5, 6}) {
			t.Fatalf("row %d: all five positive weights drawn as %v", r, v[5*r:5*r+5])
		}
	}
}

func TestMultinomialErrors(t *testing.T) {
	d := CPU()
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		p           []float32
		rows, cols  int
		samples     int
		replacement bool
		want        string
	}{
		{[]float32{1, 2, 3, -1}, 2, 2, 1, true, "ops: multinomial: row 1 has a negative, infinite or NaN weight (column 1)"},
		{[]float32{1, nan, 3, 1}, 2, 2, 1, true, "ops: multinomial: row 0 has a negative, infinite or NaN weight (column 1)"},
		{[]float32{1, 1, inf, 1}, 2, 2, 1, false, "ops: multinomial: row 1 has a negative, infinite or NaN weight (column 0)"},
		{[]float32{1, 1, 0, 0}, 2, 2, 1, true, "ops: multinomial: row 1 has no positive weight (its 2 weights are zero)"},
		{[]float32{3e38, 3e38}, 1, 2, 1, true, "ops: multinomial: the weights of row 0 sum to more than the largest float32"},
		{[]float32{1, 0, 1, 1}, 2, 2, 2, false, "ops: multinomial: row 0 has 1 positive weights, fewer than the 2 samples drawn without replacement"},
		{[]float32{1, 1}, 1, 2, 3, false, "ops: multinomial: 3 samples without replacement from rows of 2 weights"},
		{[]float32{1, 1}, 1, 2, -1, true, "ops: multinomial: -1 samples (want >= 0)"},
		{[]float32{}, 2, 0, 1, true, "ops: multinomial: rows of no weights (probs is (2, 0))"},
	} {
		p, _ := FromFloat32(d, c.p)
		ix, err := Multinomial(p, c.rows, c.cols, c.samples, c.replacement, 7)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: error %v, want %q", c.p, err, c.want)
		}
		ix.Release()
		p.Release()
	}
}

// TestSelectSharedConstants compares the tile and block of select.cu with the Go side.
func TestSelectSharedConstants(t *testing.T) {
	testenv.CheckCUDAConstants(t, []testenv.CUDAConstant{
		{Files: "../ptx/select.cu", Expr: "SORT_TILE", GoName: "cpu.SortTile", Go: cpu.SortTile},
		{Files: "../ptx/select.cu", Expr: "SORT_THREADS", GoName: "sortThreads", Go: sortThreads},
	})
}

// Sorting the rows of a matrix: the values and the column each came from.
func ExampleSortRows() {
	x, _ := FromFloat32(CPU(), []float32{3, 1, 2, float32(math.NaN()), -1, 2, 0, 2})
	defer x.Release()
	vals, idx, _ := SortRows(x, 2, 4, false)
	defer vals.Release()
	defer idx.Release()
	v, _ := vals.Float32s()
	i, _ := idx.Ints()
	fmt.Println(v, i)
	// Output: [1 2 3 NaN -1 0 2 2] [1 2 0 3 0 2 1 3]
}

// The two largest values of each row, ties in column order.
func ExampleTopK() {
	x, _ := FromFloat32(CPU(), []float32{5, 7, 7, 1, 0, 9})
	defer x.Release()
	vals, idx, _ := TopK(x, 2, 3, 2, true)
	defer vals.Release()
	defer idx.Release()
	v, _ := vals.Float32s()
	i, _ := idx.Ints()
	fmt.Println(v, i)
	// Output: [7 7 9 1] [1 2 2 0]
}

// Drawing from unnormalized weights: without replacement, a column of weight 0 is never drawn.
func ExampleMultinomial() {
	w, _ := FromFloat32(CPU(), []float32{0, 2, 0, 1, 1})
	defer w.Release()
	idx, _ := Multinomial(w, 1, 5, 3, false, KeyOf(42, 0))
	defer idx.Release()
	i, _ := idx.Ints()
	slices.Sort(i)
	fmt.Println(i)
	// Output: [1 3 4]
}
