package ptx

import "testing"

// TestMatmulLaunchFamilies pins MatmulLaunch's choice of tile family and geometry on the shapes
// that decided it (internal/bench/sgemm/NOTES.md): the kernels' bits do not depend on it, their
// speed does.
func TestMatmulLaunchFamilies(t *testing.T) {
	cases := []struct {
		batch, m, n, p int
		transA, transB bool
		want           *Kernel
		blocks         uint32
	}{
		{1, 128, 784, 512, false, false, MatmulTinyNN, 64},      // an MLP layer: 8 tiles of 64 x 128
		{1, 4096, 1024, 64, false, true, MatmulTinyNT, 256},     // 32 tiles of 128 x 64
		{1, 1024, 1024, 1024, false, false, MatmulSmallNN, 128}, // 64 large tiles: too few
		{1, 4096, 4096, 4096, true, false, MatmulTN, 1024},      // 1024 large tiles
		{64, 512, 64, 512, false, false, MatmulSmallNN, 256},    // short K: 8 tiles per block
		{64, 64, 512, 512, true, false, MatmulSmallTN, 256},     // m = 64: 128-row tiles pad m
		{64, 512, 512, 64, false, true, MatmulNarrowNT, 256},    // attention's dA: p = 64
		{600, 130, 20, 33, true, true, MatmulNarrowTT, 300},     // short K: 4 narrow tiles per block
		{1, 2049, 300, 2055, false, false, MatmulSmallNN, 561},  // both shapes pad alike
		{0, 5, 7, 3, false, false, MatmulTinyNN, 1},             // nothing to do: one block
		{1, 1000, 33, 1100, false, true, MatmulSmallNT, 144},    // 1100 = 8*128 + 76: not narrow
		{1, 4096, 4096, 4160, false, false, MatmulNN, 1056},     // 4160 = 32*128 + 64: the large tiles
		{1, 4096, 4096, 1088, false, false, MatmulNN, 288},      // 1088 = 8*128 + 64: the large tiles
		{16, 512, 512, 192, false, false, MatmulSmallNN, 256},   // narrow would save only a quarter
		{32, 130, 512, 64, false, false, MatmulNarrowNN, 64},    // ragged m: 256 x 64 against 192 x 128
	}
	for _, c := range cases {
		k, grid, block := MatmulLaunch(c.batch, c.m, c.n, c.p, c.transA, c.transB)
		if k != c.want || grid[0] != c.blocks || grid[1] != 1 || grid[2] != 1 || block[1] != 1 || block[2] != 1 {
			t.Errorf("%dx%dx%dx%d (%v, %v): %s with grid %v, want %s with %d blocks", c.batch, c.m, c.n, c.p,
				c.transA, c.transB, k.Name, grid, c.want.Name, c.blocks)
		}
	}
}
