package ops

import (
	"fmt"

	"github.com/torchlean-go/torchlean/ptx"
)

// kernelOp is one row of the kernel table: a PTX kernel and its CPU twin, side by side, with the
// GPU launch (grid) and the CPU's index space (units). The kernel's PTX parameters are, in order:
// the buffers (outs destinations, then ins inputs), the index arrays (idx of them, uint32 as
// Indices), the sizes (u64) and the float32 scalars; any number of each. The CPU twin computes
// the units [lo, hi) of its index space of units(sizes) units (rows, columns, chunks...); units
// are independent, so any split gives the same bits.
//
// Rows are declared with row(&kernelOp{...}) and named fields, each stating what it uses; row
// checks the row when the package initializes (a missing twin, index space or grid panics, so
// every test of the package fails at once with the row's name).
type kernelOp struct {
	name           string
	kernel         *ptx.Kernel // the kernel; nil when grid is a picked grid, which names it
	outs, ins, idx int
	grid           grid
	units          func(s []int) int
	cpu            func(a *hostArgs, lo, hi int)
	whole          bool // the twin splits its work itself: run it once over [0, units)
}

// row returns op after checking it; see kernelOp.
func row(op *kernelOp) *kernelOp {
	_, picked := op.grid.(pickedGrid)
	switch {
	case op.name == "":
		panic("ops: a kernel row without a name")
	case op.cpu == nil:
		panic("ops: kernel row " + op.name + " has no CPU twin")
	case op.units == nil:
		panic("ops: kernel row " + op.name + " has no CPU index space (units)")
	case op.grid == nil:
		panic("ops: kernel row " + op.name + " has no GPU grid")
	case op.kernel == nil && !picked:
		panic("ops: kernel row " + op.name + " has no PTX kernel (only a picked grid names its own)")
	case op.kernel != nil && picked:
		panic("ops: kernel row " + op.name + " has a PTX kernel and a picked grid (the grid names the kernel)")
	case op.outs < 1 || op.ins < 0 || op.idx < 0:
		panic(fmt.Sprintf("ops: kernel row %s has %d outputs, %d inputs, %d index arrays", op.name, op.outs, op.ins, op.idx))
	}
	return op
}

// launchArgs are the operands of one kernelOp launch.
type launchArgs struct {
	bufs    []storage // outs, then ins
	idx     []*Indices
	sizes   []int
	scalars []float32
}

// hostArgs are the operands as the CPU twin sees them: b[k] is buffer k (outs, then ins), idx[k]
// index array k, s the sizes, f the scalars.
type hostArgs struct {
	b   [][]float32
	idx [][]uint32
	s   []int
	f   []float32
}

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

// oneUnit is the index space of a twin that does its whole work in one unit.
func oneUnit([]int) int { return 1 }

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
	bufs := make([]*Buffer, 0, len(outs)+len(ins)+len(idx))
	bufs = append(append(bufs, outs...), ins...)
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
	a := launchArgs{bufs: make([]storage, len(outs)+len(ins)), idx: idx, sizes: sizes, scalars: scalars}
	for k, b := range bufs[:len(a.bufs)] {
		a.bufs[k] = b.mem
	}
	if err := outs[0].dev.be.kernel(op, &a); err != nil {
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
