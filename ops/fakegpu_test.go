//go:build linux && (amd64 || arm64) && !nocuda && !race

package ops

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/driver"
	"github.com/torchlean-go/torchlean/ptx"
)

// The CUDA backend on driver.Fake: the launch queue, the allocator, uploads and the error paths
// run on a machine without a GPU, and the fake reports every command that uses device memory
// that is not allocated (see driver.Fake). Kernels compute nothing here: these tests check the
// protocol, the mirror test on a GPU checks the values. (Not under -race: the fake's callbacks
// write C-style through raw addresses.)

// newFakeDevice returns a queued CUDA device on a new fake libcuda.
func newFakeDevice(t *testing.T, o driver.FakeOptions) (*Device, *driver.Fake) {
	t.Helper()
	o.Pointers = func(name string) ([]bool, bool) {
		for _, k := range ptx.All {
			if k.Name == name {
				ps, err := k.Params()
				if err != nil {
					return nil, false
				}
				ptrs := make([]bool, len(ps))
				for i, p := range ps {
					ptrs[i] = p == ptx.U64 // pointers and sizes; the fake tells them apart by value
				}
				return ptrs, true
			}
		}
		return nil, false
	}
	f, ctx := driver.NewFake(o)
	g, err := newCUDABackendOn(ctx, "fake", gpuFacts{arch: 90, sms: 132, sharedOptin: 227 << 10}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	return &Device{kind: KindCUDA, name: "fake", be: g}, f
}

// checkFake fails the test on the fake's violations.
func checkFake(t *testing.T, f *driver.Fake) {
	t.Helper()
	if v := f.Violations(); len(v) > 0 {
		t.Fatalf("%d violations, the first: %s", len(v), v[0])
	}
}

// churn runs workers goroutines that each queue Full and Exp and release both until stop is
// closed (out of memory skips a round), and returns the wait of untilStopped.
func churn(d *Device, workers int, sizes func(w, i int) int, stop chan struct{}) func() error {
	return untilStopped(workers, stop, func(w, i int) error {
		x, err := Full(d, sizes(w, i), 1)
		if err != nil {
			return skipOOM(err)
		}
		y, err := Exp(x)
		x.Release()
		if err != nil {
			return skipOOM(err)
		}
		y.Release()
		return nil
	})
}

// skipOOM is err unless it is an out-of-memory error.
func skipOOM(err error) error {
	if errors.Is(err, ErrOutOfMemory) {
		return nil
	}
	return err
}

// stopChurn closes stop, waits for churn's workers (their error fails the test), syncs d and
// checks the fake's books.
func stopChurn(t *testing.T, d *Device, f *driver.Fake, stop chan struct{}, wait func() error) {
	t.Helper()
	close(stop)
	if err := wait(); err != nil {
		t.Error(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	checkFake(t, f)
}

// TestFakeCollectWhileQueued: Collect(true) while other goroutines queue ops and release their
// buffers frees no block that a queued command still uses.
func TestFakeCollectWhileQueued(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{LaunchDelay: 3 * time.Microsecond})
	stop := make(chan struct{})
	wait := churn(d, 4, func(w, i int) int { return 4096 + w }, stop)
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end) && len(f.Violations()) == 0; {
		if err := d.Collect(true); err != nil {
			t.Errorf("Collect: %v", err)
			break
		}
	}
	stopChurn(t, d, f, stop, wait)
	if f.Launches() == 0 || f.Frees() == 0 {
		t.Fatalf("%d launches, %d frees: the test did not run", f.Launches(), f.Frees())
	}
}

// TestFakeOutOfMemoryRetry: the allocator's flush after an out-of-memory error, with other
// goroutines' commands queued, frees no block in use.
func TestFakeOutOfMemoryRetry(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{LaunchDelay: 3 * time.Microsecond, MemoryBytes: 64 << 10})
	stop := make(chan struct{})
	wait := churn(d, 4, func(w, i int) int { return 1024 * (1 + w) }, stop) // four size classes
	time.Sleep(300 * time.Millisecond)
	stopChurn(t, d, f, stop, wait)
}

// TestFakeFinalizers: buffers dropped without Release while their kernels are queued go back
// through their cleanups without a command using freed memory, and the live bytes return to 0.
func TestFakeFinalizers(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{LaunchDelay: 2 * time.Microsecond})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 1500 {
				x, _ := Full(d, 1000+i%7, 1)
				_, _ = Exp(x)
				if i%300 == 0 {
					runtime.GC()
					_ = d.Collect(true)
				}
			}
		})
	}
	wg.Wait()
	for i := 0; i < 50 && d.Stats().LiveBytes != 0; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if live := d.Stats().LiveBytes; live != 0 {
		t.Errorf("live bytes %d after the cleanups", live)
	}
	checkFake(t, f)
}

// TestFakeUploads: staged (pinned ring) and synchronous uploads from many goroutines, each
// followed by an op and a download.
func TestFakeUploads(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 30 {
				n := []int{10, 300000, 3 << 20}[(i+w)%3]
				x, err := FromFloat32(d, make([]float32, n))
				if err != nil {
					t.Error(err)
					return
				}
				y, err := Exp(x)
				x.Release()
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := y.Float32s(); err != nil {
					t.Error(err)
				}
				y.Release()
			}
		})
	}
	wg.Wait()
	checkFake(t, f)
}

// TestFakeLaunchRefused: a launch the driver refuses fails the queue: that op or a later one,
// Sync and downloads report it, nothing hangs, and releasing everything brings the live bytes
// back to 0.
func TestFakeLaunchRefused(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{LaunchDelay: 2 * time.Microsecond})
	x, err := Full(d, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	f.FailLaunches(driver.ErrInvalidValue)
	var ys []*Buffer
	for range 20 {
		y, err := Exp(x)
		if err != nil {
			break
		}
		ys = append(ys, y)
	}
	err = d.Sync()
	if !errors.Is(err, driver.ErrInvalidValue) {
		t.Errorf("Sync after a refused launch: %v, want CUDA_ERROR_INVALID_VALUE", err)
	}
	if _, err := x.Float32s(); !errors.Is(err, driver.ErrInvalidValue) {
		t.Errorf("download after a refused launch: %v", err)
	}
	if _, err := Exp(x); !errors.Is(err, driver.ErrInvalidValue) {
		t.Errorf("op after a refused launch: %v", err)
	}
	f.FailLaunches(driver.Success)
	x.Release()
	for _, y := range ys {
		y.Release()
	}
	if live := d.Stats().LiveBytes; live != 0 {
		t.Errorf("live bytes %d after releasing everything", live)
	}
	checkFake(t, f)
}

// TestFakeDeviceLost: a sticky error from cuCtxSynchronize makes every later path report a
// lost device, without hanging.
func TestFakeDeviceLost(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{})
	x, err := Full(d, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	f.FailSynchronize(driver.ErrIllegalAddress)
	if err := d.Sync(); !driver.IsDeviceLost(err) {
		t.Fatalf("Sync: %v, want device lost", err)
	}
	for name, fn := range map[string]func() error{
		"op":       func() error { _, err := Exp(x); return err },
		"zeros":    func() error { _, err := Zeros(d, 1<<22); return err },
		"download": func() error { _, err := x.Float32s(); return err },
		"upload":   func() error { _, err := FromFloat32(d, []float32{1, 2}); return err },
		"collect":  func() error { return d.Collect(true) },
		"sync":     func() error { return d.Sync() },
	} {
		if err := fn(); !driver.IsDeviceLost(err) {
			t.Errorf("%s after the device was lost: %v, want device lost", name, err)
		}
	}
}

// TestFakeDevice: the fake's context names its device and releases.
func TestFakeDevice(t *testing.T) {
	f, ctx := driver.NewFake(driver.FakeOptions{})
	if name, err := ctx.Device().Name(); name != "fake" || err != nil {
		t.Errorf("device name %q (%v)", name, err)
	}
	if err := ctx.Release(); err != nil {
		t.Errorf("Release: %v", err)
	}
	checkFake(t, f)
}

// TestFakeConcatN: ConcatN's device copies into offsets of its result use allocated memory
// only (the fake keeps books, not values: TestConcatN checks those on a GPU).
func TestFakeConcatN(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{})
	a := mustBuf(t, d, []float32{1, 2, 3})
	b := mustBuf(t, d, []float32{4})
	r, err := ConcatN(b, a, b)
	if err != nil || r.Len() != 5 {
		t.Fatalf("concat_n on the fake: %v", err)
	}
	r.Release()
	a.Release()
	b.Release()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	checkFake(t, f)
}

// TestErrorsNamePublicOp: errors of ops composed from internal kernels name the op called
// (out of memory in Matmul and BroadcastTo, Indices of another device in the indexing ops, a
// bad row of ScatterAddRow).
func TestErrorsNamePublicOp(t *testing.T) {
	cpuDev := CPU()
	n := 1 << 20 // n x n floats: 4 TiB
	if math.MaxInt == math.MaxInt32 {
		n = 1 << 15 // 4 GiB, more than a 32-bit program can hold
	}
	a := mustBuf(t, cpuDev, make([]float32, n))
	defer a.Release()
	want := func(what string, err error, op, text string) {
		t.Helper()
		if err == nil || !strings.HasPrefix(err.Error(), "ops: "+op+": ") || !strings.Contains(err.Error(), text) {
			t.Errorf("%s: %v, want an error of %s saying %q", what, err, op, text)
		}
	}
	_, err := Matmul(a, a, n, 1, n)
	want("Matmul of a 4 TiB product", err, "matmul", "out of memory")
	if !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("Matmul: %v does not wrap ErrOutOfMemory", err)
	}
	_, err = BroadcastTo(a, []int{n}, []int{n, n}, []int{0, 1})
	want("BroadcastTo rows", err, "broadcast_to", "out of memory")
	_, err = BroadcastTo(a, []int{n}, []int{n, n}, []int{1, 0})
	want("BroadcastTo columns", err, "broadcast_to", "out of memory")

	fake, f := newFakeDevice(t, driver.FakeOptions{})
	ix, err := NewIndices(fake, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	mat := mustBuf(t, cpuDev, []float32{1, 2, 3, 4})
	vals := mustBuf(t, cpuDev, []float32{1, 2, 3, 4})
	defer SetDeterministic(Deterministic())
	for _, det := range []bool{false, true} {
		SetDeterministic(det)
		_, err = ScatterAddRowsIdx(mat, vals, 2, 2, ix)
		want("ScatterAddRowsIdx with Indices of another device", err, "scatter_add_rows", "different devices")
		_, err = GatherRowsIdx(mat, 2, 2, ix)
		want("GatherRowsIdx with Indices of another device", err, "gather_rows", "different devices")
	}
	row := mustBuf(t, cpuDev, []float32{1, 2})
	_, err = ScatterAddRow(mat, row, 2, 2, -1)
	want("ScatterAddRow of row -1", err, "scatter_add_row", "negative row index -1")
	if big := uint64(math.MaxUint32) + 1; uint64(math.MaxInt) >= big {
		_, err = ScatterAddRow(mat, row, 2, 2, int(big))
		want("ScatterAddRow of row 2^32", err, "scatter_add_row", "row index 4294967296 does not fit")
	}
	for _, b := range []*Buffer{mat, vals, row} {
		b.Release()
	}
	ix.Release()
	checkFake(t, f)
}

// TestFakeDownloadTooLarge: downloading a device buffer larger than the host's memory is
// ErrOutOfMemory naming the download, not a fatal error or the kernel's OOM killer (the fake
// device holds it without memory behind it).
func TestFakeDownloadTooLarge(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{})
	total, _ := hostMemory()
	if total == 0 {
		t.Skip("the host's memory is unknown")
	}
	n := int(total/4) + 1<<20 // 4 MiB more than the host has
	b, err := Zeros(d, n)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if _, err := b.Float32s(); !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "ops: download: ") {
		t.Errorf("Float32s of %d floats: %v, want ErrOutOfMemory from download", n, err)
	}
	if _, err := b.Float64s(); !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "ops: download: ") {
		t.Errorf("Float64s of %d floats: %v, want ErrOutOfMemory from download", n, err)
	}
	// The refused downloads never waited for the queue: drain it before the next test's fake
	// takes over the driver's symbols.
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	checkFake(t, f)
}

// TestFakeAllocatorReuse: results released in turn are served from the cache, with no
// cuMemAlloc or cuMemFree per op; Collect(true) returns the cached blocks to the driver.
func TestFakeAllocatorReuse(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{})
	x, err := Full(d, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	step := func() {
		y, err := Exp(x)
		if err != nil {
			t.Fatal(err)
		}
		z, err := Add(x, y)
		if err != nil {
			t.Fatal(err)
		}
		y.Release()
		z.Release()
	}
	step() // the first results allocate
	allocs, frees := f.Allocs(), f.Frees()
	for range 2000 {
		step()
	}
	if a, fr := f.Allocs()-allocs, f.Frees()-frees; a != 0 || fr != 0 {
		t.Errorf("4000 results released in turn: %d cuMemAlloc and %d cuMemFree calls, want 0", a, fr)
	}
	if err := d.Collect(true); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.CachedBytes != 0 || f.Frees() == frees {
		t.Errorf("after Collect(true): cached %d bytes, %d frees; want 0 and some", st.CachedBytes, f.Frees()-frees)
	}
	checkFake(t, f)
}

// TestFakeLaunchArgsChecked: a launch whose arguments do not match the kernel's PTX .param list
// (count or type) is refused before the driver sees it.
func TestFakeLaunchArgsChecked(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{})
	g := d.be.(*cudaBackend)
	x, err := Full(d, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	launches := f.Launches()
	for _, c := range []struct {
		name string
		fill func(p *argPack)
		want string
	}{
		{"too few", func(p *argPack) { p.ptr(x.mem); p.ptr(x.mem) }, "takes 3 parameters, got 2"},
		{"a float for the size", func(p *argPack) { p.ptr(x.mem); p.ptr(x.mem); p.f32(4) }, "parameter 2"},
	} {
		err := g.packed(func(p *argPack) error {
			c.fill(p)
			return g.launch(linear(ptx.AbsFwd, 1, 32), p)
		})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := f.Launches() - launches; n != 0 {
		t.Errorf("%d launches reached the driver", n)
	}
	checkFake(t, f)
}

// TestKernelCoverage runs every mirror case (and the exact path of every Rel case) on the fake
// driver, with the facts of an H100 so that the device-dependent choices (the sm_80 kernels) are
// made as there, and requires that every kernel of package ptx is launched: a kernel that no case
// reaches is not guarded by the golden hashes. It also requires that nothing used the legacy
// default stream. Inputs are zeros (the fake computes nothing) and lengths above 2^23 are left out
// (they reach no other kernel: the sum's third pass is sum_chunks again).
func TestKernelCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	d, f := newFakeDevice(t, driver.FakeOptions{})
	for _, c := range mirrorCases() {
		for _, n := range c.sizes {
			lens := c.lens
			if lens == nil {
				lens = make([]int, c.ins)
				for k := range lens {
					lens[k] = n
				}
			}
			if n > 1<<23 || slices.Max(append([]int{0}, lens...)) > 1<<23 {
				continue
			}
			for _, run := range []func(*Device, []*Buffer, int) ([]*Buffer, error){c.run, c.tier.ref} {
				if run == nil {
					continue
				}
				ins := make([]*Buffer, len(lens))
				for k, l := range lens {
					b, err := Zeros(d, l)
					if err != nil {
						t.Fatal(err)
					}
					ins[k] = b
				}
				outs, err := run(d, ins, n)
				if err != nil {
					t.Fatalf("%s n=%d: %v", c.name, n, err)
				}
				releaseAll(outs)
				releaseAll(ins)
			}
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	launched := f.Launched()
	for _, k := range ptx.All {
		if launched[k.Name] == 0 {
			t.Errorf("kernel %s is never launched by the mirror cases: add a case that reaches it", k)
		}
	}
	if calls := f.LegacyCalls(); len(calls) > 0 {
		t.Errorf("%d calls on the legacy default stream (the device's work must all go to its own stream), the first: %s",
			len(calls), calls[0])
	}
	checkFake(t, f)
}

// TestFakeLibraryCall: a library call queued between kernels runs on the issuing thread (the
// fake records a call from a thread without the context current), after the commands queued
// before it and before those queued after it, with the device's stream; its error fails the queue
// like a refused launch, naming the call.
func TestFakeLibraryCall(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{LaunchDelay: 20 * time.Microsecond})
	g := d.be.(*cudaBackend)
	x, err := Full(d, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	before := f.Launches()
	var ys []*Buffer
	for range 50 {
		y, err := Exp(x)
		if err != nil {
			t.Fatal(err)
		}
		ys = append(ys, y)
	}
	seen, calls := int64(-1), 0
	var stream driver.Stream
	err = g.libraryCall("fake library", func(ctx *driver.Context, s driver.Stream) error {
		calls++
		seen, stream = f.Launches()-before, s
		return ctx.MemsetD32Async(x.mem.ptr, 0, 1, s) // a call into the driver with the context current
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		y, err := Exp(x)
		if err != nil {
			t.Fatal(err)
		}
		ys = append(ys, y)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	releaseAll(ys)
	if calls != 1 || seen != 50 || stream != g.stream {
		t.Errorf("the call ran %d times, after %d of the 50 launches queued before it, on stream %#x (the device's: %#x)",
			calls, seen, stream, g.stream)
	}
	if n := f.Launches() - before; n != 60 {
		t.Errorf("%d launches, want 60", n)
	}
	boom := errors.New("boom")
	if err := g.libraryCall("fake library", func(*driver.Context, driver.Stream) error { return boom }); err != nil {
		t.Fatal(err)
	}
	err = d.Sync()
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "fake library") {
		t.Errorf("Sync after a failed library call: %v, want the call's error naming it", err)
	}
	if _, err := Exp(x); err == nil {
		t.Error("an op after the failed library call succeeded")
	}
	checkFake(t, f)
	if calls := f.LegacyCalls(); len(calls) > 0 {
		t.Errorf("calls on the legacy default stream: %v", calls)
	}
}
