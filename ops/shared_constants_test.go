package ops

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/internal/testenv"
	"github.com/torchlean-go/torchlean/ptx"
)

// The arithmetic contract's shared constants (DESIGN.md, "Arithmetic contract", point 7): the
// constants of this package's launches that the CUDA sources define too, read from both sides.
// Most shape only the launch (which never changes a bit of a result, but a launch that does not
// fit the kernel traps, computes nothing or wastes the GPU); the comment of each says which.

const (
	rowstatCUH = "../ptx/rowstat.cuh"
	rowregCUH  = "../ptx/rowstat.cuh ../ptx/rowreg.cuh"
	normCU     = "../ptx/rowstat.cuh ../ptx/rowreg.cuh ../ptx/norm.cu"
)

// TestSharedConstants checks the named constants of the launches against the macros.
func TestSharedConstants(t *testing.T) {
	rows := []struct {
		files, expr, goName string
		goValue             float64
	}{
		// Launch: mapGrid's blocks of mapThreads threads, each covering TL_MAP_U float4s, so that
		// every block makes one step of the map loop.
		{"../ptx/map.cuh", "TL_MAP_U", "mapFloat4s", mapFloat4s},
		// Launch: the block of the *_long softmax kernels, 256 threads per SM_LONG elements of each
		// partial's chain (long_row_layout traps on another block).
		{rowstatCUH, "SM_LONG", "softmaxLongPerThread", softmaxLongPerThread},
		// Launch: the longest rows the *_long kernels hold in registers (SM_LONG_COLS).
		{rowstatCUH, "SM_THREADS * SM_LONG_GROUPS * SM_LONG", "softmaxLongCols", softmaxLongCols},
		// Launch: the end of softmax_fwd's register paths, beyond which rows take the *_long kernels.
		{rowregCUH, "SM_THREADS * SM_REG", "softmaxShortCols", softmaxShortCols},
		// Launch: the end of the layer norm register paths (layer_norm_fwd_row's rows;
		// layer_norm_bwd's fused scheme).
		{rowregCUH, "SM_THREADS * SM_REG", "layerNormRegCols", layerNormRegCols},
		// Launch: the fewest rows of layer_norm_bwd's fused scheme (layerNormBwdBlocks' grid).
		{normCU, "LN_FUSED_ROWS", "layerNormFusedRows", layerNormFusedRows},
		// Arithmetic: the rows of each chunk of layer_norm_bwd's dgamma and dbeta partials, whose
		// buffers LayerNormBwd sizes with colChunks.
		{normCU, "LN_CHUNK", "cpu.ColChunk", cpu.ColChunk},
		// Arithmetic: the rows of each first-stage chunk of the column reductions (colChunks,
		// byColumn's stages; columnThreads' tiled path beyond).
		{"../ptx/reduce_axis.cu", "COL_CHUNK", "cpu.ColChunk", cpu.ColChunk},
		// Launch: the static shared memory of the *_long_async kernels, mq and sq (two
		// SM_LONG_GROUPS x SM_THREADS float arrays, as TestSharedSoftmaxLongStatic checks),
		// which softmaxLongLaunch adds to the dynamic bytes it checks against sharedOptin.
		{rowstatCUH, "2 * SM_LONG_GROUPS * SM_THREADS * 4", "softmaxLongStatic", softmaxLongStatic},
		// Launch: the block of sum_chunks, one thread per partial of a chunk (the kernel assumes it).
		{"../ptx/reduce.cu", "SUM_THREADS", "sumThreads", sumThreads},
		// Launch: the longest complex FFT of the row kernels (fft_row, rfft_row, irfft_row; a row of
		// float2 in 64 KiB of shared memory), longer ones taking fft_stage per stage.
		{"../ptx/fft.cu", "FFT_ROW_MAX", "fftRowMax", fftRowMax},
		// Launch: the row kernels' blocks have at least c / FFT_ROW_VALUES threads (fftRowThreads);
		// each thread holds ceil(FFT_ROW_VALUES / R) butterflies of a radix-R stage.
		{"../ptx/fft.cu", "FFT_ROW_VALUES", "fftRowValues", fftRowValues},
		// Launch: the row kernels' __launch_bounds__, the most threads fftRowThreads gives.
		{"../ptx/fft.cu", "FFT_ROW_THREADS", "fftRowMaxThreads", fftRowMaxThreads},
		// Launch: the plan words of the row kernels (fftRowPlan): the most stages, the bits of each
		// stage's radix and of its odd radix's constants' offset.
		{"../ptx/fft.cu", "FFT_ROW_STAGES", "fftRowStages", fftRowStages},
		{"../ptx/fft.cu", "FFT_ROW_RADIX_BITS", "fftRowRadixBits", fftRowRadixBits},
		{"../ptx/fft.cu", "FFT_ROW_RC_BITS", "fftRowRcBits", fftRowRcBits},
	}
	table := make([]testenv.CUDAConstant, len(rows))
	for i, r := range rows {
		table[i] = testenv.CUDAConstant{Files: r.files, Expr: r.expr, GoName: r.goName, Go: r.goValue}
	}
	testenv.CheckCUDAConstants(t, table)
}

// cudaMatch returns the submatches of the regular expression re in file, failing the test when
// it does not match.
func cudaMatch(t *testing.T, file, re string) []string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(re).FindStringSubmatch(string(src))
	if m == nil {
		t.Fatalf("%s: no match for %s (the kernel's code changed: update this test)", file, re)
	}
	return m[1:]
}

// cudaValue evaluates the C expression expr with the macros of files (and extra names).
func cudaValue(t *testing.T, files, expr string, extra map[string]float64) int {
	t.Helper()
	d := testenv.CUDADefines(t, strings.Fields(files)...)
	for k, v := range extra {
		d[k] = v
	}
	v, ok := testenv.CUDAExpr(expr, d)
	if !ok || v != float64(int(v)) {
		t.Fatalf("%s: cannot evaluate %s to an integer", files, expr)
	}
	return int(v)
}

// TestSharedBounds checks the row-length bounds of the launches against the conditions the
// kernels test, read from their code (these bounds are expressions there, not macros).
func TestSharedBounds(t *testing.T) {
	for _, c := range []struct {
		files, re string // the expression is the regular expression's submatch k in the last file
		k         int
		goName    string
		goValue   int
	}{
		// Launch: layer_norm_fwd_row takes the rows of layer_norm_fwd's second register path
		// (1024 < cols <= 4096), whose bounds layer_norm_fwd writes SM_THREADS * 4 and * 16.
		{normCU, `(?s)void __launch_bounds__\([^)]*\)\s*layer_norm_fwd\(.*?if \(cols <= ([^)]*)\).*?else if \(cols <= ([^)]*)\)`,
			0, "layerNormRowCols", layerNormRowCols},
		{normCU, `(?s)void __launch_bounds__\([^)]*\)\s*layer_norm_fwd\(.*?if \(cols <= ([^)]*)\).*?else if \(cols <= ([^)]*)\)`,
			1, "layerNormRegCols", layerNormRegCols},
		// Launch: layerNormBwdBlocks gives one block per chunk exactly where layer_norm_bwd takes
		// its fused scheme.
		{normCU, `if \(cols <= ([^&]+?) && rows >= ([^)]+)\)`, 0, "layerNormRegCols", layerNormRegCols},
		{normCU, `if \(cols <= ([^&]+?) && rows >= ([^)]+)\)`, 1, "layerNormFusedRows", layerNormFusedRows},
		// Launch: softmaxFwdOp sends the rows beyond softmax_rows' register paths to the *_long
		// kernels.
		{rowregCUH + " ../ptx/softmax.cu", `(?s)softmax_rows\(.*?if \(cols <= ([^)]*)\).*?else if \(cols <= ([^)]*)\)`,
			1, "softmaxShortCols", softmaxShortCols},
	} {
		files := strings.Fields(c.files)
		expr := cudaMatch(t, files[len(files)-1], c.re)[c.k]
		if v := cudaValue(t, c.files, expr, nil); v != c.goValue {
			t.Errorf("%s: the bound %s = %d, but the Go twin %s = %d", files[len(files)-1], expr, v, c.goName, c.goValue)
		}
	}

	// Correctness of the launch: reduce_*_by_row_warp16 traps on rows longer than 8 L, L = 16
	// (its template argument), and rowReduce gives it the rows of at most rowHalfWarpCols.
	const reduceAxis = "../ptx/reduce_axis.cu"
	bound := cudaMatch(t, reduceAxis, `if \(L < 32 && cols > ([^)]*)\) __trap\(\);`)[0]
	for _, name := range []string{"reduce_sum_by_row_warp16", "reduce_max_by_row_warp16"} {
		l := cudaMatch(t, reduceAxis, name+`\([^)]*\)\s*\{\s*row_reduce_warp<\w+,\s*([^>]+)>`)[0]
		lanes := cudaValue(t, reduceAxis, l, nil)
		if v := cudaValue(t, reduceAxis, bound, map[string]float64{"L": float64(lanes)}); v != rowHalfWarpCols {
			t.Errorf("%s: %s (L = %d) traps beyond %s = %d columns, but rowHalfWarpCols = %d",
				reduceAxis, name, lanes, bound, v, rowHalfWarpCols)
		}
	}
}

// testFacts are the facts of an H100-like device (the async softmax kernels allowed).
var testFacts = gpuFacts{arch: 90, sms: 132, sharedOptin: 227 << 10}

// TestSharedBlocks checks the blocks of the launches against the thread counts the kernels
// assume (their loops stride by these macros, so another block would compute wrong values).
// Arithmetic: the number of partials of every row statistic and reduction.
func TestSharedBlocks(t *testing.T) {
	for _, c := range []struct {
		op            *kernelOp
		sizes         []int
		files, expr   string
		wantKernel    *ptx.Kernel // for picked grids
		whatForKernel string
	}{
		{softmaxOp, []int{1000, 3000}, rowstatCUH, "SM_THREADS", nil, ""},
		{logSoftmaxOp, []int{1000, 300}, rowstatCUH, "SM_THREADS", nil, ""},
		{maskedSoftmaxOp, []int{1000, 30000}, rowstatCUH, "SM_THREADS", nil, ""},
		{softmaxBwdOp, []int{10, 3000}, rowstatCUH, "SM_THREADS", nil, ""},
		{logSoftmaxBwdOp, []int{10, 5000}, rowstatCUH, "SM_THREADS", nil, ""},
		{layerNormFwdOp, []int{1000, 3000}, rowstatCUH, "SM_THREADS", nil, ""},
		{layerNormFwdRowOp, []int{1000, 3000}, rowstatCUH, "SM_THREADS", nil, ""},
		{layerNormBwdOp, []int{5000, 1000}, rowstatCUH, "SM_THREADS", nil, ""},
		{layerNormBwdOp, []int{100, 10000}, rowstatCUH, "SM_THREADS", nil, ""},
		{sumByRowOp, []int{1000, rowHalfWarpCols}, "../ptx/reduce_axis.cu", "ROW_THREADS", ptx.ReduceSumByRowWarp16, "16 lanes per row"},
		{sumByRowOp, []int{1000, rowHalfWarpCols + 1}, "../ptx/reduce_axis.cu", "ROW_THREADS", ptx.ReduceSumByRowWarp, "a warp per row"},
		{maxByRowOp, []int{1000, rowWarpCols}, "../ptx/reduce_axis.cu", "ROW_THREADS", ptx.ReduceMaxByRowWarp, "a warp per row"},
		{maxByRowOp, []int{1000, rowWarpCols + 1}, "../ptx/reduce_axis.cu", "ROW_THREADS", ptx.ReduceMaxByRow, "a block per row"},
	} {
		want := cudaValue(t, c.files, c.expr, nil)
		s := c.op.grid.shape(c.op.kernel, c.sizes, testFacts)
		name := c.op.name
		if s.kernel != nil {
			name = s.kernel.Name
		}
		if s.block != [3]uint32{uint32(want), 1, 1} {
			t.Errorf("%s %v: block %v, but its kernel assumes %s = %d threads", name, c.sizes, s.block, c.expr, want)
		}
		if c.wantKernel != nil && s.kernel != c.wantKernel {
			t.Errorf("%s %v: kernel %s, want %s (%s)", c.op.name, c.sizes, name, c.wantKernel.Name, c.whatForKernel)
		}
	}
}

// TestSharedSoftmaxLong checks softmaxLongLaunch's blocks against the Launch rule of rowstat.cuh
// (long_row_layout traps on another block): blockDim.x = SM_THREADS * long_row_groups(cols),
// transcribed here with the header's macros, at most SM_THREADS * SM_LONG_GROUPS, for every row
// length of the *_long kernels, on devices with and without the async variants. Launch (and the
// parts of the log-softmax sums, which long_row_part makes a function of cols only).
func TestSharedSoftmaxLong(t *testing.T) {
	d := testenv.CUDADefines(t, rowstatCUH)
	threads, long, groups := int(d["SM_THREADS"]), int(d["SM_LONG"]), int(d["SM_LONG_GROUPS"])
	if threads <= 0 || long <= 0 || groups <= 0 {
		t.Fatalf("rowstat.cuh: SM_THREADS = %d, SM_LONG = %d, SM_LONG_GROUPS = %d", threads, long, groups)
	}
	for _, facts := range []gpuFacts{testFacts, {arch: 70, sms: 80, sharedOptin: 96 << 10}} {
		for _, op := range []*kernelOp{softmaxLongOp, logSoftmaxLongOp} {
			for cols := softmaxShortCols + 1; cols <= softmaxLongCols; cols++ {
				jl := (cols + threads - 1) / threads
				nq := max((jl+long-1)/long, 1) // long_row_groups
				s := op.grid.shape(op.kernel, []int{64, cols}, facts)
				if s.block != [3]uint32{uint32(threads * nq), 1, 1} || nq > groups {
					t.Fatalf("%s, %d columns (arch %d): block %v, but long_row_layout needs %d x %d threads (at most %d groups)",
						s.kernel.Name, cols, facts.arch, s.block, threads, nq, groups)
				}
			}
		}
	}
}

// TestSharedSoftmaxLongStatic checks the shape of the static shared memory that
// softmaxLongStatic counts: the *_long_async kernels' only static arrays are mq and sq, of
// SM_LONG_GROUPS x SM_THREADS floats each (TestSharedConstants checks the value). Launch.
func TestSharedSoftmaxLongStatic(t *testing.T) {
	src, err := os.ReadFile("../ptx/softmax_sm80.cu")
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile(`//.*`).ReplaceAllString(string(src), "")
	arrays := regexp.MustCompile(`__shared__\s+float\s+\w+\[SM_LONG_GROUPS\]\[SM_THREADS\];`).FindAllString(code, -1)
	static := len(regexp.MustCompile(`__shared__`).FindAllString(code, -1)) -
		len(regexp.MustCompile(`extern\s+__shared__`).FindAllString(code, -1))
	if len(arrays) != 2 || static != 2 {
		t.Errorf("softmax_sm80.cu: %d static __shared__ declarations, %d of them float [SM_LONG_GROUPS][SM_THREADS]; "+
			"softmaxLongStatic (%d bytes) counts two such arrays", static, len(arrays), softmaxLongStatic)
	}
}

// TestSharedLayoutLaunch checks the launches of layout.cu's kernels against its macros. Launch:
// transpose2d's blocks are TILE threads wide, one per column of a tile of TILE columns, and its
// grid's x covers the column tiles (no grid stride in x); broadcast_to's work units are segments
// of BC_SEG vectors per thread (any grid computes the same output; broadcastThreads sizes it).
func TestSharedLayoutLaunch(t *testing.T) {
	d := testenv.CUDADefines(t, "../ptx/layout.cu")
	tile, seg := int(d["TILE"]), int(d["BC_SEG"])
	if tile <= 0 || seg <= 0 {
		t.Fatalf("layout.cu: TILE = %d, BC_SEG = %d", tile, seg)
	}
	for _, cols := range []int{1, 31, 32, 33, 1000, 4099} {
		s := transposeOp.grid.shape(transposeOp.kernel, []int{3, 77, cols}, testFacts)
		if s.block[0] != uint32(tile) || int(s.grid[0])*tile < cols {
			t.Errorf("transpose2d of %d columns: block %v and grid %v, but the kernel takes TILE = %d columns per block",
				cols, s.block, s.grid, tile)
		}
	}
	for _, l := range []int{1, 7, 8, 100, 2000, 4096, 4099} {
		s := []int{3 * l, 2, 1, 3, l, 0, 0, 0, 0, 0, 0}
		rows, vecs := broadcastRows(s)
		x := int(broadcastBlock(s)[0])
		if want := rows * ((vecs + seg*x - 1) / (seg * x)) * x; broadcastThreads(s) != want {
			t.Errorf("broadcast_to, rows of %d: broadcastThreads = %d, want %d for BC_SEG = %d vectors per thread",
				l, broadcastThreads(s), want, seg)
		}
	}
}

// TestSharedColumnLaunch checks the launch of the column reductions' tiled path against
// reduce_axis.cu: columns longer than COL_CHUNK rows run column_tiled, one block of at most 256
// threads (a multiple of COL_TW) per strip of COL_TW columns. Launch.
func TestSharedColumnLaunch(t *testing.T) {
	d := testenv.CUDADefines(t, "../ptx/reduce_axis.cu")
	tw := int(d["COL_TW"])
	if tw <= 0 {
		t.Fatalf("reduce_axis.cu: COL_TW = %d", tw)
	}
	for _, cols := range []int{1, 7, 8, 9, 1000} {
		s := []int{2, int(d["COL_CHUNK"]) + 1, cols}
		b := columnBlock(s)
		threads := int(b[0] * b[1])
		if threads > 256 || threads%tw != 0 || columnThreads(s) != 2*((cols+tw-1)/tw)*threads {
			t.Errorf("column reduction %v: %d threads in blocks of %v, want one block of a multiple of COL_TW = %d "+
				"(at most 256) per strip of COL_TW columns", s, columnThreads(s), b, tw)
		}
	}
}
