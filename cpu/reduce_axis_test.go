package cpu

import (
	"math"
	"testing"
)

// TestColumnChunked checks that the one-pass chunked column reductions give the bits of the two
// stages they replace (ReduceSum/MaxColumnChunks, then ReduceSum/MaxByColumn over the chunks),
// for any split of the units, with NaN, infinities and signed zeros in the input.
func TestColumnChunked(t *testing.T) {
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0,
		float32(math.Copysign(0, -1))}
	for _, sh := range [][3]int{{1, 0, 5}, {1, 1, 3}, {2, 64, 4}, {3, 65, 7}, {2, 200, 36}, {1, 1003, 9}} {
		batch, rows, cols := sh[0], sh[1], sh[2]
		x := make([]float32, batch*rows*cols)
		for i := range x {
			z := SplitMix64(uint64(i))
			x[i] = float32(int64(z>>40)-1<<23) * 0x1p-20
			if z%13 == 0 {
				x[i] = specials[z>>8%uint64(len(specials))]
			}
		}
		chunks := (rows + ColChunk - 1) / ColChunk
		part := make([]float32, batch*chunks*cols)
		for _, isMax := range []bool{false, true} {
			want := make([]float32, batch*cols)
			got := make([]float32, batch*cols)
			if isMax {
				ReduceMaxColumnChunks(part, x, batch, rows, cols, 0, batch*chunks)
				ReduceMaxByColumn(want, part, batch, chunks, cols, 0, batch*cols)
			} else {
				ReduceSumColumnChunks(part, x, batch, rows, cols, 0, batch*chunks)
				ReduceSumByColumn(want, part, batch, chunks, cols, 3, 0, batch*cols)
			}
			for lo := 0; lo < batch*cols; lo += 5 { // units in uneven pieces
				hi := min(batch*cols, lo+5)
				if isMax {
					ReduceMaxByColumnChunked(got, x, batch, rows, cols, lo, hi)
				} else {
					ReduceSumByColumnChunked(got, x, batch, rows, cols, 3, lo, hi)
				}
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("%v max=%v: out[%d] = %v, two stages give %v", sh, isMax, i, got[i], want[i])
				}
			}
		}
	}
}
