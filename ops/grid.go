package ops

import "github.com/torchlean-go/torchlean/ptx"

// A grid is the GPU launch of a kernel row as a function of its sizes and of the device: the
// kernel (the row's, unless the grid picks one), the grid and block shapes and the bytes of
// dynamic shared memory. Launch shapes never change a bit of any result (every kernel's order
// of operations is a function of the sizes only); they only spread the work. Each kind below
// states what it needs and nothing more.
type grid interface {
	shape(k *ptx.Kernel, s []int, d gpuFacts) launchShape
}

// launchShape is one launch: kernel, grid, block and bytes of dynamic shared memory.
type launchShape struct {
	kernel      *ptx.Kernel
	grid, block [3]uint32
	shared      uint32
}

// gpuFacts are the device properties that launch choices depend on.
type gpuFacts struct {
	arch        int // compute capability as 10*major + minor (90 for an H100)
	sms         int // multiprocessors
	sharedOptin int // bytes of shared memory a block may use (static + dynamic, opted in)
}

// maxBlocks is the cap of grid-stride grids: 32 blocks per multiprocessor.
func (d gpuFacts) maxBlocks() uint64 { return uint64(max(d.sms, 1)) * 32 }

// blocksFor returns the blocks of threads-thread blocks covering work items, capped at
// maxBlocks for grid-stride loops (at least 1).
func (d gpuFacts) blocksFor(work uint64, threads uint32) uint32 {
	b := (work + uint64(threads) - 1) / uint64(threads)
	return uint32(max(1, min(b, d.maxBlocks())))
}

// stridedGrid: threads(s) work items in grid-stride blocks of 256 x 1 threads, or of block(s)
// (x, y, at most 256 threads) when block is set.
type stridedGrid struct {
	threads func(s []int) int
	block   func(s []int) [2]uint32
}

func (g stridedGrid) shape(k *ptx.Kernel, s []int, d gpuFacts) launchShape {
	bs := [2]uint32{256, 1}
	if g.block != nil {
		bs = g.block(s)
	}
	return launchShape{kernel: k, grid: [3]uint32{d.blocksFor(uint64(g.threads(s)), bs[0]*bs[1]), 1, 1},
		block: [3]uint32{bs[0], bs[1], 1}}
}

// strided is stridedGrid over threads(s) work items in 256-thread blocks.
func strided(threads func(s []int) int) grid { return stridedGrid{threads: threads} }

// rowGrid: one 256-thread block per row, rows(s) rows, grid-stride (at most maxBlocks blocks).
type rowGrid struct{ rows func(s []int) int }

func (g rowGrid) shape(k *ptx.Kernel, s []int, d gpuFacts) launchShape {
	blocks := uint32(max(1, min(uint64(g.rows(s)), d.maxBlocks())))
	return launchShape{kernel: k, grid: [3]uint32{blocks, 1, 1}, block: [3]uint32{256, 1, 1}}
}

// blockGrid: exactly blocks(s) 256-thread blocks (at least 1).
type blockGrid struct{ blocks func(s []int) int }

func (g blockGrid) shape(k *ptx.Kernel, s []int, _ gpuFacts) launchShape {
	return launchShape{kernel: k, grid: [3]uint32{uint32(max(1, min(g.blocks(s), 1<<31-1))), 1, 1},
		block: [3]uint32{256, 1, 1}}
}

// tileGrid: 32x8-thread blocks over the 32x32 tiles of sizes (batch, rows, cols).
type tileGrid struct{}

func (tileGrid) shape(k *ptx.Kernel, s []int, _ gpuFacts) launchShape {
	batch, rows, cols := s[0], s[1], s[2]
	gx := max(1, min((cols+31)/32, 1<<31-1))
	gy := max(1, min((rows+31)/32, 65535))
	gz := max(1, min(batch, 65535))
	return launchShape{kernel: k, grid: [3]uint32{uint32(gx), uint32(gy), uint32(gz)}, block: [3]uint32{32, 8, 1}}
}

// pickedGrid: the kernel and the whole launch chosen from the sizes and the device's facts (the
// row's kernel field is nil).
type pickedGrid func(s []int, d gpuFacts) launchShape

func (g pickedGrid) shape(_ *ptx.Kernel, s []int, d gpuFacts) launchShape { return g(s, d) }
