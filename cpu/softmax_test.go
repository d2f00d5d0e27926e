package cpu

import "testing"

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
// the order of the additions shows (checked: the one chain gives other bits).
func TestRowSumParts(t *testing.T) {
	var p, q [rowThreads]float32
	for _, cols := range []int{8193, 20000, 32768} {
		// Partial 0 holds 1 and then elements of 2^-24, which the one chain absorbs (1 + 2^-24
		// rounds to 1) and the parts after the first add up exactly, so the two orders differ.
		row := make([]float32, cols)
		row[0] = 1
		for i := rowThreads; i < cols; i += rowThreads {
			row[i] = 0x1p-24
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
		wantSum := rowTree(&want, false, rowThreads)
		if got := rowSumParts(&p, &q, row, jq); got != wantSum {
			t.Errorf("cols %d: rowSumParts = %v, want %v", cols, got, wantSum)
		}
		if jl := (cols + rowThreads - 1) / rowThreads; jq < jl && rowFold(&p, row, false) == wantSum {
			t.Errorf("cols %d: the parts give the one chain's sum: the row does not show the order", cols)
		}
	}
}
