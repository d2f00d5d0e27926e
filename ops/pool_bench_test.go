package ops

import (
	"os"
	"strconv"
	"testing"
)

// BenchmarkPool: issue 26's pooling problem, max pooling 3x3 stride 2 padding 1 (ResNet's stem)
// and average pooling 2x2 stride 2, forward and backward, on (batch, 64, 56, 56), and max
// pooling's training pair (the forward keeping offsets, the backward from them). The batch is
// TORCHLEAN_POOL_BATCH (default 16 rather than the 64: on 2 shared cores the four take
// about a third of a second per pass at 16, 1.3 s at 64; measured at batch 4: max forward 13 ms,
// backward 44 ms, average forward 5.4 ms, backward 21 ms, AMD EPYC, 2 cores, load ~3).
func BenchmarkPool(b *testing.B) {
	batch := 16
	if v, err := strconv.Atoi(os.Getenv("TORCHLEAN_POOL_BATCH")); err == nil && v > 0 {
		batch = v
	}
	benchPool(b, CPU(), batch)
}

// BenchmarkPoolCUDA is BenchmarkPool on CUDA device 0 at the batch of 64 (skips without
// one); internal/bench/torch_bench.py times PyTorch's pooling on the same shapes.
func BenchmarkPoolCUDA(b *testing.B) {
	d, err := Open("cuda")
	if err != nil {
		b.Skipf("no CUDA device: %v", err)
	}
	benchPool(b, d, 64)
}

// benchPool runs BenchmarkPool's four cases on d at (batch, 64, 56, 56).
func benchPool(b *testing.B, d *Device, batch int) {
	shape := []int{batch, 64, 56, 56}
	must := func(x *Buffer, err error) *Buffer {
		if err != nil {
			b.Fatal(err)
		}
		return x
	}
	x := must(RandNormal(d, numel(shape), 0, 1, 1))
	defer x.Release()
	for _, c := range []struct {
		name string
		p    PoolParams
		fwd  func(x *Buffer, s []int, p PoolParams) (*Buffer, error)
		bwd  func(x, g *Buffer, s []int, p PoolParams) (*Buffer, error)
	}{
		{"max3x3s2p1", PoolParams{Kernel: []int{3, 3}, Stride: []int{2, 2}, Padding: []int{1, 1}}, MaxPoolND, MaxPoolNDBackward},
		{"avg2x2s2", PoolParams{Kernel: []int{2, 2}, CountIncludePad: true}, AvgPoolND,
			func(_, g *Buffer, s []int, p PoolParams) (*Buffer, error) { return AvgPoolNDBackward(g, s, p) }},
	} {
		out, err := PoolOutShape(shape, c.p)
		if err != nil {
			b.Fatal(err)
		}
		g := must(RandNormal(d, numel(out), 0, 1, 2))
		bytes := int64(4 * (numel(shape) + numel(out)))
		b.Run(c.name+"/fwd", func(b *testing.B) {
			b.SetBytes(bytes)
			for b.Loop() {
				must(c.fwd(x, shape, c.p)).Release()
			}
			if err := d.Sync(); err != nil {
				b.Fatal(err)
			}
		})
		b.Run(c.name+"/bwd", func(b *testing.B) {
			b.SetBytes(bytes + int64(4*numel(shape))) // reads x (max), gO; writes dx
			for b.Loop() {
				must(c.bwd(x, g, shape, c.p)).Release()
			}
			if err := d.Sync(); err != nil {
				b.Fatal(err)
			}
		})
		g.Release()
	}
	// Max pooling as a training step runs it: the one-pass forward that keeps the offsets, and
	// the backward from them (PyTorch's max_pool2d with indices and its backward).
	p := PoolParams{Kernel: []int{3, 3}, Stride: []int{2, 2}, Padding: []int{1, 1}}
	out, err := PoolOutShape(shape, p)
	if err != nil {
		b.Fatal(err)
	}
	g := must(RandNormal(d, numel(out), 0, 1, 2))
	defer g.Release()
	y, offsets, err := MaxPoolNDWithOffsets(x, shape, p)
	if err != nil {
		b.Fatal(err)
	}
	defer y.Release()
	defer offsets.Release()
	b.Run("max3x3s2p1/fwd_offsets", func(b *testing.B) {
		b.SetBytes(int64(4 * (numel(shape) + 2*numel(out))))
		for b.Loop() {
			y, o, err := MaxPoolNDWithOffsets(x, shape, p)
			if err != nil {
				b.Fatal(err)
			}
			y.Release()
			o.Release()
		}
		if err := d.Sync(); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("max3x3s2p1/bwd_offsets", func(b *testing.B) {
		b.SetBytes(int64(4 * (2*numel(out) + numel(shape)))) // reads offsets, gO; writes dx
		for b.Loop() {
			must(MaxPoolNDBackwardOffsets(offsets, g, shape, p)).Release()
		}
		if err := d.Sync(); err != nil {
			b.Fatal(err)
		}
	})
}
