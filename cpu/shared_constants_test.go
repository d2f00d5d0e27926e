package cpu

import (
	"testing"

	"github.com/torchlean-go/torchlean/internal/testenv"
)

// The arithmetic contract's shared constants (DESIGN.md, "Arithmetic contract", point 7): every
// constant that shapes a kernel's arithmetic is defined in its CUDA source and in its CPU twin
// here; these tests read both. The CUDA side is read by
// internal/testenv's evaluator (testenv.CUDADefines).

// TestSharedConstants checks that every constant shaping the arithmetic of a kernel and of its
// CPU twin in this package has the same value in the CUDA source and here.
func TestSharedConstants(t *testing.T) {
	testenv.CheckCUDAConstants(t, []testenv.CUDAConstant{
		// Arithmetic: the elements one sum_chunks block (one SumChunks chunk) reduces.
		{Files: "../ptx/reduce.cu", Expr: "SUM_CHUNK", GoName: "SumChunkLen", Go: SumChunkLen},
		// Arithmetic: the partials of a sum_chunks chunk and their halving tree.
		{Files: "../ptx/reduce.cu", Expr: "SUM_THREADS", GoName: "sumThreads", Go: sumThreads},
		// Arithmetic: the partials of a row reduction (thread t folds t, t+256, ...) and their tree.
		{Files: "../ptx/reduce_axis.cu", Expr: "ROW_THREADS", GoName: "rowThreads", Go: rowThreads},
		// Arithmetic: the rows of each first-stage chunk of the column reductions.
		{Files: "../ptx/reduce_axis.cu", Expr: "COL_CHUNK", GoName: "ColChunk", Go: ColChunk},
		// Arithmetic: the partials of the row statistics of softmax and layer norm (rowStat,
		// rowFold, the layer norm's rowSubSq) and their tree.
		{Files: "../ptx/rowstat.cuh", Expr: "SM_THREADS", GoName: "rowThreads", Go: rowThreads},
		// Arithmetic: the longest row whose log-softmax sum is cut into the long-row engine's
		// parts (longRowPart; SM_LONG, a literal here, is checked by TestSharedLongRowPart).
		{Files: "../ptx/rowstat.cuh", Expr: "SM_LONG_COLS", GoName: "longRowCols", Go: longRowCols},
		// Arithmetic: the rows of each chunk of layer_norm_bwd's dgamma and dbeta partials
		// (LayerNormBwd's chunks of ColChunk rows).
		{Files: "../ptx/norm.cu", Expr: "LN_CHUNK", GoName: "ColChunk", Go: ColChunk},
		// Results: the bits of the NaN every f32math function returns.
		{Files: "../ptx/f32math.cuh", Expr: "TLF_CANONICAL_NAN_BITS", GoName: "CanonicalNaNBits", Go: CanonicalNaNBits},
		// Arithmetic: the flag bits of sgd_step (the momentum buffer's first step; Nesterov).
		{Files: "../ptx/optim.cu", Expr: "TL_SGD_FIRST", GoName: "SGDFirst", Go: SGDFirst},
		{Files: "../ptx/optim.cu", Expr: "TL_SGD_NESTEROV", GoName: "SGDNesterov", Go: SGDNesterov},
		// Arithmetic: the float32 constants of GELU (tanh approximation) and of its backward.
		{Files: "../ptx/elementwise_math.cu", Expr: "TL_GELU_C", GoName: "geluC", Go: float64(geluC), Float32: true},
		{Files: "../ptx/elementwise_math.cu", Expr: "TL_GELU_3C", GoName: "gelu3C", Go: float64(gelu3C), Float32: true},
		{Files: "../ptx/elementwise_math.cu", Expr: "TL_GELU_K2", GoName: "geluK2", Go: float64(geluK2), Float32: true},
	})
	// The f32math.cuh constants, written __uint_as_float(bits), are no numeric #defines: they are
	// checked bit for bit by TestCUDAConstants, and elementwise_math.cu's TL_L1P_* by
	// TestLog1pUnitTable (rules_test.go).
}

// TestSharedLongRowPart checks longRowPart, which writes SM_LONG (32 elements per thread and
// group) as a literal, against long_row_groups and long_row_part of rowstat.cuh, transcribed
// here with the header's SM_THREADS, SM_LONG and SM_LONG_COLS, for every row length up to past
// SM_LONG_COLS. Arithmetic: the parts of a log-softmax row sum.
func TestSharedLongRowPart(t *testing.T) {
	d := testenv.CUDADefines(t, "../ptx/rowstat.cuh")
	threads, long, longCols := int(d["SM_THREADS"]), int(d["SM_LONG"]), int(d["SM_LONG_COLS"])
	if threads <= 0 || long <= 0 || longCols <= 0 {
		t.Fatalf("rowstat.cuh: SM_THREADS = %d, SM_LONG = %d, SM_LONG_COLS = %d", threads, long, longCols)
	}
	for cols := 0; cols <= longCols+4*threads; cols++ {
		jl := (cols + threads - 1) / threads // long_row_part
		want := jl
		if cols <= longCols {
			nq := max((jl+long-1)/long, 1) // long_row_groups
			want = (jl + nq - 1) / nq
		}
		if got := longRowPart(cols); got != want {
			t.Fatalf("longRowPart(%d) = %d, rowstat.cuh's long_row_part = %d", cols, got, want)
		}
	}
}

// The evaluator: a verbatim copy of internal/testenv/cuconst.go's region (TestCUDADefinesCopies).
