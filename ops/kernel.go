package ops

import (
	"fmt"

	"github.com/torchlean-go/torchlean/ptx"
)

// kernelOp is one row of the table of one-off kernels (layout, axis reductions, softmax,
// indexing...). Its PTX parameters are, in order: the buffers (outs destinations, then ins
// inputs), the index arrays (idx of them, uint32, as Indices), the sizes (u64) and the float32
// scalars. The CPU twin computes the units [lo, hi) of
// its index space of cpuUnits(sizes) units (rows, columns, chunks...); units are independent, so
// any split gives the same bits. geometry gives the GPU launch.
type kernelOp struct {
	name           string
	kernel         *ptx.Kernel
	outs, ins, idx int
	geometry       geometry
	cpuUnits       func(s []int) int
	cpu            func(a *hostArgs, lo, hi int)
	selfParallel   bool // the twin splits its work itself: run it once over [0, units)
}

// maxBufs, maxSizes and maxScalars bound the parameters of a kernelOp.
const (
	maxBufs    = 8
	maxIdx     = 2
	maxSizes   = 12
	maxScalars = 9 // adam_step
)

// launchArgs are the operands of one kernelOp launch.
type launchArgs struct {
	bufs    [maxBufs]storage
	idx     [maxIdx]*Indices
	sizes   []int
	scalars []float32
}

// hostArgs are the operands as the CPU twin sees them.
type hostArgs struct {
	b   [maxBufs][]float32
	idx [maxIdx][]uint32
	s   []int
	f   []float32
}

// geometry is a GPU launch shape as a function of the sizes.
type geometry struct {
	kind   gridKind
	space  func(s []int) int       // work items (gridStride), rows (gridRows), blocks (gridBlocks)
	block  func(s []int) [2]uint32 // gridStride: the block shape (x, y), at most 256 threads; nil: 256 x 1
	custom func(s []int) (k *ptx.Kernel, grid, block [3]uint32)
	device func(s []int, d gpuFacts) launchShape
}

// launchShape is a launch chosen for the device: kernel, grid, block and bytes of dynamic shared
// memory.
type launchShape struct {
	kernel      *ptx.Kernel
	grid, block [3]uint32
	shared      uint32
}

type gridKind int

const (
	gridStride gridKind = iota // blocks of 256 threads (or block's shape) over space threads, grid-stride
	gridRows                   // one 256-thread block per row (space rows), grid-stride
	gridTiles                  // 32x8-thread blocks over 32x32 tiles of sizes (batch, rows, cols)
	gridBlocks                 // exactly space 256-thread blocks (at least 1)
	gridCustom                 // kernel and shape chosen by custom (op.kernel is unused)
	gridDevice                 // kernel, shape and shared memory chosen by device for the GPU's facts
)

func strided(space func(s []int) int) geometry { return geometry{kind: gridStride, space: space} }
func perRow(rows func(s []int) int) geometry   { return geometry{kind: gridRows, space: rows} }

func blocks(n func(s []int) int) geometry { return geometry{kind: gridBlocks, space: n} }

// stridedShaped is strided with the block shape chosen from the sizes (space counts threads).
func stridedShaped(space func(s []int) int, block func(s []int) [2]uint32) geometry {
	return geometry{kind: gridStride, space: space, block: block}
}

// chosen is the geometry of an op whose kernel itself depends on the sizes.
func chosen(f func(s []int) (*ptx.Kernel, [3]uint32, [3]uint32)) geometry {
	return geometry{kind: gridCustom, custom: f}
}

// chosenOn is the geometry of an op whose kernel depends on the sizes and on the device.
func chosenOn(f func(s []int, d gpuFacts) launchShape) geometry {
	return geometry{kind: gridDevice, device: f}
}

var tiles = geometry{kind: gridTiles}

// size returns the function returning sizes[k].
func size(k int) func(s []int) int { return func(s []int) int { return s[k] } }

// product returns the function returning the product of the sizes at ks.
func product(ks ...int) func(s []int) int {
	return func(s []int) int {
		p := 1
		for _, k := range ks {
			p *= s[k]
		}
		return p
	}
}

// call runs op on the device of ins[0] into fresh outputs of the given lengths. Inputs are
// borrowed; an error releases the outputs.
func (op *kernelOp) call(outLens []int, ins []*Buffer, idx []*Indices, sizes []int, scalars ...float32) ([]*Buffer, error) {
	if err := sameDevice(op.name, ins); err != nil {
		return nil, err
	}
	d := ins[0].dev
	outs := make([]*Buffer, len(outLens))
	empty := true
	for k, n := range outLens {
		b, err := newBuffer(d, n)
		if err != nil {
			releaseAll(outs[:k])
			return nil, opErr(op.name, err)
		}
		outs[k] = b
		empty = empty && n == 0
	}
	if empty {
		return outs, nil
	}
	if err := op.launch(outs, ins, idx, sizes, scalars...); err != nil {
		releaseAll(outs)
		return nil, err
	}
	return outs, nil
}

// call1 is call for one output.
func (op *kernelOp) call1(outLen int, ins []*Buffer, idx []*Indices, sizes []int, scalars ...float32) (*Buffer, error) {
	outs, err := op.call([]int{outLen}, ins, idx, sizes, scalars...)
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// launch runs op with existing outputs (which it may read: some kernels accumulate into them).
func (op *kernelOp) launch(outs, ins []*Buffer, idx []*Indices, sizes []int, scalars ...float32) error {
	if len(outs) != op.outs || len(ins) != op.ins || len(idx) != op.idx {
		return fmt.Errorf("ops: %s: %d outputs, %d inputs, %d index arrays; want %d, %d, %d",
			op.name, len(outs), len(ins), len(idx), op.outs, op.ins, op.idx)
	}
	bufs := append(append([]*Buffer(nil), outs...), ins...)
	for _, ix := range idx {
		if ix == nil {
			return fmt.Errorf("ops: %s: nil indices", op.name)
		}
		bufs = append(bufs, ix.buf) // useAll checks its device too
	}
	if err := useAll(op.name, bufs...); err != nil {
		return err
	}
	defer doneAll(bufs...)
	var a launchArgs
	for k, b := range bufs[:len(outs)+len(ins)] {
		a.bufs[k] = b.mem
	}
	copy(a.idx[:], idx)
	a.sizes, a.scalars = sizes, scalars
	err := outs[0].dev.be.kernel(op, &a)
	if err != nil {
		return opErr(op.name, err)
	}
	return nil
}

// sameDevice checks that the buffers are live and on one device.
func sameDevice(op string, bufs []*Buffer) error {
	for _, x := range bufs {
		if err := x.liveIn(op); err != nil {
			return err
		}
		if err := onDevice(op, x, bufs[0].dev); err != nil {
			return err
		}
	}
	return nil
}

// onDevice checks that operand x of op is on d.
func onDevice(op string, x *Buffer, d *Device) error {
	if x.dev != d {
		return fmt.Errorf("ops: %s: operands on different devices (%s, %s)", op, d, x.dev)
	}
	return nil
}

func releaseAll(bs []*Buffer) {
	for _, b := range bs {
		if b != nil {
			b.Release()
		}
	}
}
