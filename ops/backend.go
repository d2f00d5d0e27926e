package ops

import (
	"github.com/torchlean-go/torchlean/driver"
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

// isZero reports whether s is no memory at all (a nil host slice and a null pointer).
func (s storage) isZero() bool { return s.host == nil && s.ptr == 0 }

// backend is what a Device needs from the CPU or a CUDA device: memory, transfers, and one
// method per kind of kernel row (mapOp, randOp, the sum's chunks, kernelOp), each running a
// row's PTX kernel on a GPU and its Go twin on the CPU. Sizes are element counts; n > 0 unless
// stated. A new kernel is a row of one of these tables (see kernelOp), not a new method.
type backend interface {
	alloc(n int) (storage, error)
	free(s storage, n int)
	upload(dst storage, src []float32) error
	uploadIndex(dst storage, src []uint32) error // the bits of src into len(src) float32 slots
	download(dst []float32, src storage) error
	fill(dst storage, n int, v float32) error
	copy(dst, src storage, n int) error

	mapKernel(op *mapOp, outs, ins [3]storage, n int, scalars [2]float32) error
	randKernel(op *randOp, dst storage, n int, key drawKey, scalars [2]float32) error
	sumChunks(out, x storage, n int, divisor float32) error
	kernel(op *kernelOp, a *launchArgs) error

	sync() error
	memInfo() (free, total uint64)
	collect() error
}
