package ops

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/driver"
)

// benchDevices returns the CPU (at 2^24 floats) and, when usable, CUDA device 0 (at 2^26);
// TORCHLEAN_BENCH_DEVICES (e.g. "cuda") keeps only the devices it names.
func benchDevices(b *testing.B) []struct {
	d *Device
	n int
} {
	var out []struct {
		d *Device
		n int
	}
	want := os.Getenv("TORCHLEAN_BENCH_DEVICES") // a comma list; empty means cpu,cuda
	if want == "" || strings.Contains(want, "cpu") {
		out = append(out, struct {
			d *Device
			n int
		}{CPU(), 1 << 24})
	}
	if want == "" || strings.Contains(want, "cuda") {
		if d, err := Open("cuda"); err == nil {
			out = append(out, struct {
				d *Device
				n int
			}{d, 1 << 26})
		}
	}
	return out
}

var benchOps = []string{"add", "mul", "axpy", "scale", "relu", "relu_bwd", "exp", "tanh", "sigmoid", "gelu", "gelu_bwd", "sqrt"}

func opNamed(name string) *mapOp {
	for _, op := range mapOps {
		if op.name == name {
			return op
		}
	}
	panic("no op " + name)
}

func benchInputs(b *testing.B, d *Device, k, n int) []*Buffer {
	ins := make([]*Buffer, k)
	for i := range ins {
		var err error
		if ins[i], err = RandUniform(d, n, uint64(i+1)); err != nil {
			b.Fatal(err)
		}
	}
	return ins
}

func reportGBs(b *testing.B, bytes int, elapsed time.Duration) {
	b.ReportMetric(float64(bytes)*float64(b.N)/elapsed.Seconds()/1e9, "GB/s")
}

// BenchmarkElementwise measures kernels, counting bytes as (inputs + outputs) * 4 * n.
func BenchmarkElementwise(b *testing.B) {
	for _, dn := range benchDevices(b) {
		for _, name := range benchOps {
			op := opNamed(name)
			b.Run(fmt.Sprintf("%s/%s/n=%d", name, dn.d.Kind(), dn.n), func(b *testing.B) {
				ins := benchInputs(b, dn.d, op.ins, dn.n)
				defer ReleaseThen(nil, ins...)
				sc := mirrorScalars[name]
				if err := dn.d.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					outs, err := op.run(ins, sc...)
					if err != nil {
						b.Fatal(err)
					}
					ReleaseThen(nil, outs[:op.outs]...)
				}
				if err := dn.d.Sync(); err != nil {
					b.Fatal(err)
				}
				reportGBs(b, 4*dn.n*(op.ins+op.outs), time.Since(start))
			})
		}
	}
}

// BenchmarkReduce measures the whole-buffer reductions (bytes = 4n read).
func BenchmarkReduce(b *testing.B) {
	for _, dn := range benchDevices(b) {
		for _, r := range []struct {
			name string
			f    func(*Buffer) (*Buffer, error)
		}{{"sum", Sum}, {"mean", Mean}} {
			b.Run(fmt.Sprintf("%s/%s/n=%d", r.name, dn.d.Kind(), dn.n), func(b *testing.B) {
				x := benchInputs(b, dn.d, 1, dn.n)[0]
				defer x.Release()
				dn.d.Sync()
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					s, err := r.f(x)
					if err != nil {
						b.Fatal(err)
					}
					s.Release()
				}
				if err := dn.d.Sync(); err != nil {
					b.Fatal(err)
				}
				reportGBs(b, 4*dn.n, time.Since(start))
			})
		}
	}
}

// BenchmarkMemcpy is the bandwidth reference: a device-to-device copy (bytes = 8n).
func BenchmarkMemcpy(b *testing.B) {
	for _, dn := range benchDevices(b) {
		b.Run(fmt.Sprintf("%s/n=%d", dn.d.Kind(), dn.n), func(b *testing.B) {
			x := benchInputs(b, dn.d, 1, dn.n)[0]
			defer x.Release()
			dn.d.Sync()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				c, err := Copy(x)
				if err != nil {
					b.Fatal(err)
				}
				c.Release()
			}
			dn.d.Sync()
			reportGBs(b, 8*dn.n, time.Since(start))
		})
	}
}

// BenchmarkDispatch is the host cost of one op through the Go API: Scale of a 1-element buffer
// and the release of its result, timed with the Sync that ends the loop (as launch.c times its
// launches with the synchronization that ends each sample, so that commands still queued
// count). "cuda" is the device as opened (with its launch queue unless TORCHLEAN_LAUNCH=sync),
// "cuda-sync" a handle on it without the queue, each op calling the driver itself.
func BenchmarkDispatch(b *testing.B) {
	for _, dn := range benchDevices(b) {
		run := func(d *Device) func(b *testing.B) {
			return func(b *testing.B) {
				x := benchInputs(b, d, 1, 1)[0]
				defer x.Release()
				d.Sync()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					y, err := Scale(x, 2)
					if err != nil {
						b.Fatal(err)
					}
					y.Release()
				}
				if err := d.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run(dn.d.Kind().String(), run(dn.d))
		if g, ok := dn.d.be.(*cudaBackend); ok && g.queue != nil {
			b.Run("cuda-sync", run(syncHandle(b, dn.d)))
		}
	}
}

// syncHandle returns a second handle on CUDA device d without a launch queue.
func syncHandle(tb testing.TB, d *Device) *Device { return handleOn(tb, d, " (sync)", 0, false) }

// handleOn returns a second handle on CUDA device d (its own stream and allocator) named
// d's name + suffix, with guard bands of guard floats and a launch queue when queued.
func handleOn(tb testing.TB, d *Device, suffix string, guard int, queued bool) *Device {
	tb.Helper()
	g := d.be.(*cudaBackend)
	h, err := newCUDABackendOn(g.ctx, g.name, g.facts, guard, queued)
	if err != nil {
		tb.Fatal(err)
	}
	return &Device{kind: KindCUDA, name: d.name + suffix, be: h}
}

// BenchmarkLaunchVariants splits the host cost of one op on CUDA into its parts: the bare
// launch of the scale kernel with the context locked once for all launches (what launch.c
// times), with the context locked per launch, the op's launch path (mapKernel: argument pack,
// checks, launch, through the queue or not) into a reused result, the result buffer's
// allocation and release alone, and the whole op. Each ends with a Sync inside the timing.
func BenchmarkLaunchVariants(b *testing.B) {
	d, err := Open("cuda")
	if err != nil {
		b.Skip(err)
	}
	g := d.be.(*cudaBackend)
	x := benchInputs(b, d, 1, 1)[0]
	defer x.Release()
	y, _ := Zeros(d, 1)
	defer y.Release()
	f, err := g.function(scaleOp.kernel)
	if err != nil {
		b.Fatal(err)
	}
	args := new(driver.Args)
	args.Ptr(y.mem.ptr).Ptr(x.mem.ptr).U64(1).F32(2)
	one := [3]uint32{1, 1, 1}
	block := [3]uint32{256, 1, 1}
	b.Run("lock-once", func(b *testing.B) {
		if err := g.ctx.Lock(); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			if err := g.ctx.Launch(f.fn, one, block, 0, 0, args); err != nil {
				b.Fatal(err)
			}
		}
		g.ctx.Unlock()
		d.Sync()
	})
	b.Run("lock-each", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := g.ctx.Lock(); err != nil {
				b.Fatal(err)
			}
			if err := g.ctx.Launch(f.fn, one, block, 0, 0, args); err != nil {
				b.Fatal(err)
			}
			g.ctx.Unlock()
		}
		d.Sync()
	})
	handles := []*Device{d}
	if g.queue != nil {
		handles = append(handles, syncHandle(b, d))
	}
	for _, h := range handles {
		hg := h.be.(*cudaBackend)
		mode := "queued"
		if hg.queue == nil {
			mode = "sync"
		}
		b.Run("map-kernel/"+mode, func(b *testing.B) { // the op's launch path, result buffer reused
			for i := 0; i < b.N; i++ {
				if err := hg.mapKernel(scaleOp, [3]storage{y.mem}, [3]storage{x.mem}, 1, [2]float32{2}); err != nil {
					b.Fatal(err)
				}
			}
			h.Sync()
		})
	}
	b.Run("buffer", func(b *testing.B) { // the op's result buffer: allocation and release only
		for i := 0; i < b.N; i++ {
			r, err := newBuffer(d, 1)
			if err != nil {
				b.Fatal(err)
			}
			r.Release()
		}
	})
	b.Run("op", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r, err := Scale(x, 2)
			if err != nil {
				b.Fatal(err)
			}
			r.Release()
		}
		d.Sync()
	})
}

// BenchmarkLayout measures the transpose and the axis reductions on a 4096x4096 matrix
// (bytes = input + output).
func BenchmarkLayout(b *testing.B) {
	const rows, cols = 4096, 4096
	for _, dn := range benchDevices(b) {
		for _, r := range []struct {
			name string
			f    func(*Buffer, int, int) (*Buffer, error)
			out  int
		}{{"transpose2d", Transpose2d, rows * cols}, {"reduce_sum_by_row", ReduceSumByRow, rows},
			{"reduce_sum_by_column", ReduceSumByColumn, cols}, {"reduce_max_by_row", ReduceMaxByRow, rows},
			{"softmax", Softmax, rows * cols}, {"log_softmax", LogSoftmax, rows * cols}} {
			b.Run(fmt.Sprintf("%s/%s/n=%d", r.name, dn.d.Kind(), rows*cols), func(b *testing.B) {
				x := benchInputs(b, dn.d, 1, rows*cols)[0]
				defer x.Release()
				dn.d.Sync()
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					y, err := r.f(x, rows, cols)
					if err != nil {
						b.Fatal(err)
					}
					y.Release()
				}
				if err := dn.d.Sync(); err != nil {
					b.Fatal(err)
				}
				reportGBs(b, 4*(rows*cols+r.out), time.Since(start))
			})
		}
	}
}
