package ops

import (
	"github.com/torchlean-go/torchlean/driver"
	"github.com/torchlean-go/torchlean/ptx"
)

// storage is the memory behind a Buffer: host floats on the CPU, a device pointer on CUDA.
type storage struct {
	host []float32
	ptr  driver.DevicePtr
}

// at returns the storage from element off on.
func (s storage) at(off int) storage {
	if s.host != nil {
		return storage{host: s.host[off:]}
	}
	return storage{ptr: s.ptr + driver.DevicePtr(4*off)}
}

// backend is what a Device needs from the CPU or a CUDA device. Families of kernels are tables
// (mapOp, randOp) run by one method each; one-off kernels are methods of their own, so both
// backends must have every kernel. Sizes are element counts; n > 0 unless stated.
type backend interface {
	alloc(n int) (storage, error)
	free(s storage, n int)
	upload(dst storage, src []float32) error
	uploadIndex(dst storage, src []uint32) error // the bits of src into len(src) float32 slots
	download(dst []float32, src storage) error
	fill(dst storage, n int, v float32) error
	copy(dst, src storage, n int) error

	mapKernel(op *mapOp, outs, ins [3]storage, n int, scalars [2]float32) error
	randKernel(op *randOp, dst storage, n int, key uint64, scalars [2]float32) error
	sumChunks(out, x storage, n int, divisor float32) error
	kernel(op *kernelOp, a *launchArgs) error

	sync() error
	memInfo() (free, total uint64)
	collect() error
}

// mapOp is one row of the elementwise family: the PTX kernel and its CPU twin, with the number
// of outputs, inputs and float32 scalars (the kernel's parameters are outs, ins, n, scalars).
type mapOp struct {
	name          string
	kernel        *ptx.Kernel
	outs, ins, sc int
	cpu           func(o, i [3][]float32, s [2]float32)
}

// randOp is one row of the random family: parameters dst, n, key, scalars; the CPU twin gets the
// offset of its slice in the buffer so that element i depends only on (key, i).
type randOp struct {
	name   string
	kernel *ptx.Kernel
	sc     int
	cpu    func(dst []float32, key, offset uint64, s [2]float32)
}
