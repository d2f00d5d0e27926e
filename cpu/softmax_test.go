package cpu

import (
	"math/rand/v2"
	"testing"
)

// TestLongRowPart checks the part length of the softmax sums against the GPU's long-row layout:
// one part up to 256 * 32 columns and past longRowCols, else ceil(jl / nq) of nq = ceil(jl / 32).
func TestLongRowPart(t *testing.T) {
	for _, c := range []struct{ cols, want int }{
		{1, 1}, {4096, 16}, {8192, 32}, {8193, 17}, {16387, 22}, {20000, 27}, {24576, 32},
		{32768, 32}, {32769, 129},
	} {
		if got := longRowPart(c.cols); got != c.want {
			t.Errorf("longRowPart(%d) = %d, want %d", c.cols, got, c.want)
		}
	}
}

// TestRowSumParts checks rowSumParts against its definition written as plain loops, on rows where
// the order of the additions shows (values of widely different magnitudes).
func TestRowSumParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var p, q [rowThreads]float32
	for _, cols := range []int{300, 8193, 20000, 32768} {
		row := make([]float32, cols)
		for i := range row {
			row[i] = float32(rng.NormFloat64()) * float32(int(1)<<rng.IntN(20))
		}
		jq := longRowPart(cols)
		var want [rowThreads]float32
		for tt := range want {
			var total float32
			for part := 0; part*jq*rowThreads < cols; part++ {
				s := negZero
				for j := part * jq; j < (part+1)*jq; j++ {
					if c := tt + rowThreads*j; c < cols {
						s += row[c]
					}
				}
				if part == 0 {
					total = s
				} else {
					total += s
				}
			}
			want[tt] = total
		}
		wantSum := rowTree(&want, false)
		if got := rowSumParts(&p, &q, row, jq); got != wantSum {
			t.Errorf("cols %d: rowSumParts = %v, want %v", cols, got, wantSum)
		}
	}
}
