package cpu

import (
	"fmt"
	"testing"
)

// TestTranspose2d compares the tiled transpose (8x8 register blocks where the CPU has AVX) with
// the definition on shapes around the block and tile edges, batches, and partial column ranges.
func TestTranspose2d(t *testing.T) {
	for _, s := range [][3]int{{1, 1, 1}, {1, 8, 8}, {2, 7, 9}, {1, 33, 65}, {3, 64, 40}, {1, 100, 8}, {2, 17, 256}} {
		batch, rows, cols := s[0], s[1], s[2]
		x := make([]float32, batch*rows*cols)
		for i := range x {
			x[i] = float32(i) + 0.5
		}
		for _, r := range [][2]int{{0, batch * cols}, {3, batch*cols - 1}} {
			lo, hi := r[0], r[1]
			if lo >= hi {
				continue
			}
			dst := make([]float32, len(x))
			Transpose2d(dst, x, batch, rows, cols, lo, hi)
			for u := range batch * cols {
				b, c := u/cols, u%cols
				for i := range rows {
					want := float32(0)
					if u >= lo && u < hi {
						want = x[(b*rows+i)*cols+c]
					}
					if got := dst[(b*cols+c)*rows+i]; got != want {
						t.Fatalf("%v units [%d, %d): out[%d, %d, %d] = %v, want %v", s, lo, hi, b, c, i, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkTranspose2d reports GB/s (read + written) of a 4096 x 4096 transpose on one core.
func BenchmarkTranspose2d(b *testing.B) {
	const n = 4096
	x, dst := make([]float32, n*n), make([]float32, n*n)
	b.Run(fmt.Sprintf("%dx%d", n, n), func(b *testing.B) {
		b.SetBytes(8 * n * n)
		for b.Loop() {
			Transpose2d(dst, x, 1, n, n, 0, n)
		}
	})
}
