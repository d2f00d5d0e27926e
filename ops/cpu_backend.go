package ops

import "github.com/torchlean-go/torchlean/cpu"

// cpuBackend runs the Go twins of package cpu on host memory, splitting large buffers across
// GOMAXPROCS goroutines (every kernel is independent per element or per chunk, so the split
// never changes a bit).
type cpuBackend struct{}

// grain is the smallest slice worth a goroutine.
const grain = 1 << 15

func (cpuBackend) alloc(n int) (storage, error) { return storage{host: make([]float32, n)}, nil }
func (cpuBackend) free(storage, int)             {}
func (cpuBackend) sync() error                   { return nil }
func (cpuBackend) memInfo() (free, total uint64) { return 0, 0 }
func (cpuBackend) collect() error                { return nil }

func (cpuBackend) upload(dst storage, src []float32) error {
	copy(dst.host, src)
	return nil
}

func (cpuBackend) download(dst []float32, src storage) error {
	copy(dst, src.host)
	return nil
}

func (cpuBackend) fill(dst storage, n int, v float32) error {
	cpu.Parallel(n, grain, func(lo, hi int) {
		s := dst.host[lo:hi]
		for i := range s {
			s[i] = v
		}
	})
	return nil
}

func (cpuBackend) copy(dst, src storage, n int) error {
	cpu.Parallel(n, grain, func(lo, hi int) { copy(dst.host[lo:hi], src.host[lo:hi]) })
	return nil
}

func (cpuBackend) mapKernel(op *mapOp, outs, ins []storage, n int, scalars []float32) error {
	var s [2]float32
	copy(s[:], scalars)
	cpu.Parallel(n, grain, func(lo, hi int) {
		var o, in [3][]float32
		for k, m := range outs {
			o[k] = m.host[lo:hi]
		}
		for k, m := range ins {
			in[k] = m.host[lo:hi]
		}
		op.cpu(o, in, s)
	})
	return nil
}

func (cpuBackend) randKernel(op *randOp, dst storage, n int, key uint64, scalars []float32) error {
	var s [2]float32
	copy(s[:], scalars)
	cpu.Parallel(n, grain, func(lo, hi int) { op.cpu(dst.host[lo:hi], key, uint64(lo), s) })
	return nil
}

func (cpuBackend) sumChunks(out, x storage, n int, divisor float32) error {
	chunks := (n + cpu.SumChunkLen - 1) / cpu.SumChunkLen
	cpu.Parallel(chunks, 4, func(lo, hi int) {
		cpu.SumChunks(out.host[lo:hi], x.host[lo*cpu.SumChunkLen:min(n, hi*cpu.SumChunkLen)], divisor)
	})
	return nil
}
