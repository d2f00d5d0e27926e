package driver

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// testPTX is hand-written PTX for the GPU tests.
const testPTX = `.version 7.8
.target sm_70
.address_size 64

// add_one(float *x, uint32 n): x[i] += 1 for i < n.
.visible .entry add_one(
	.param .u64 x,
	.param .u32 n
)
{
	.reg .pred %p;
	.reg .b32 %r<5>;
	.reg .f32 %f<3>;
	.reg .b64 %rd<4>;

	ld.param.u64 %rd1, [x];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.u32 %r2, %r2, %r3, %r4;
	setp.ge.u32 %p, %r2, %r1;
	@%p bra DONE;
	cvta.to.global.u64 %rd1, %rd1;
	mul.wide.u32 %rd2, %r2, 4;
	add.u64 %rd3, %rd1, %rd2;
	ld.global.f32 %f1, [%rd3];
	add.rn.f32 %f2, %f1, 0f3F800000;
	st.global.f32 [%rd3], %f2;
DONE:
	ret;
}

// empty(): does nothing.
.visible .entry empty()
{
	ret;
}

// pack_args(float *out, uint32 a, float b, uint64 c, int32 d):
// out[0..3] = a, b, c, d as floats.
.visible .entry pack_args(
	.param .u64 out,
	.param .u32 a,
	.param .f32 b,
	.param .u64 c,
	.param .s32 d
)
{
	.reg .b32 %r<3>;
	.reg .f32 %f<5>;
	.reg .b64 %rd<3>;

	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u32 %r1, [a];
	cvt.rn.f32.u32 %f1, %r1;
	ld.param.f32 %f2, [b];
	ld.param.u64 %rd2, [c];
	cvt.rn.f32.u64 %f3, %rd2;
	ld.param.s32 %r2, [d];
	cvt.rn.f32.s32 %f4, %r2;
	st.global.f32 [%rd1], %f1;
	st.global.f32 [%rd1+4], %f2;
	st.global.f32 [%rd1+8], %f3;
	st.global.f32 [%rd1+12], %f4;
	ret;
}
`

// brokenPTX fails to JIT: it uses undeclared registers (line 6).
const brokenPTX = ".version 7.8\n.target sm_70\n.address_size 64\n.visible .entry bad()\n{\n\tadd.f32 %f1, %f2, %f3;\n\tret;\n}\n"

// gpu is the process-wide fixture: device 0's primary context and the test
// module, made once and never released.
var gpu struct {
	once                 sync.Once
	err                  error
	c                    *CUDA
	x                    *Context
	mod                  Module
	addOne, empty, packF Function
}

// needGPU returns the fixture, or skips the test when no GPU is usable;
// with TORCHLEAN_REQUIRE_CUDA=1 it fails instead.
func needGPU(t testing.TB) *Context {
	t.Helper()
	gpu.once.Do(func() { gpu.err = setupGPU() })
	if gpu.err != nil {
		if os.Getenv("TORCHLEAN_REQUIRE_CUDA") == "1" {
			t.Fatalf("TORCHLEAN_REQUIRE_CUDA=1 but CUDA is not usable: %v", gpu.err)
		}
		t.Skipf("no usable CUDA device: %v", gpu.err)
	}
	return gpu.x
}

func setupGPU() error {
	c, err := Load()
	if err != nil {
		return err
	}
	n, err := c.DeviceCount()
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("cuDeviceGetCount reports 0 devices")
	}
	d, err := c.Device(0)
	if err != nil {
		return err
	}
	x, err := c.PrimaryContext(d)
	if err != nil {
		return err
	}
	if err := x.Lock(); err != nil {
		return err
	}
	defer x.Unlock()
	m, err := x.LoadModule([]byte(testPTX))
	if err != nil {
		return err
	}
	gpu.c, gpu.x, gpu.mod = c, x, m
	if gpu.addOne, err = m.Function("add_one"); err != nil {
		return err
	}
	if gpu.empty, err = m.Function("empty"); err != nil {
		return err
	}
	gpu.packF, err = m.Function("pack_args")
	return err
}

// lock is Lock for tests: it fails the test on error and unlocks at cleanup.
func lock(t testing.TB, x *Context) {
	t.Helper()
	if err := x.Lock(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Unlock)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestGPUDeviceQuery(t *testing.T) {
	x := needGPU(t)
	c, d := x.CUDA(), x.Device()
	v, err := c.DriverVersion()
	must(t, err)
	n, err := c.DeviceCount()
	must(t, err)
	name, err := d.Name()
	must(t, err)
	major, minor, err := d.ComputeCapability()
	must(t, err)
	sms, err := d.SMCount()
	must(t, err)
	total, err := d.TotalMem()
	must(t, err)
	if name == "" || major < 3 || sms < 1 || total < 1<<28 || n < 1 || v < MinDriverVersion {
		t.Errorf("implausible: %q cc %d.%d, %d SMs, %d bytes, %d devices, driver %d",
			name, major, minor, sms, total, n, v)
	}
	lock(t, x)
	free, total2, err := x.MemGetInfo()
	must(t, err)
	if total2 != total || free == 0 || free > total {
		t.Errorf("MemGetInfo = %d free of %d, TotalMem %d", free, total2, total)
	}
	t.Logf("%s: driver %d, %d device(s), %q cc %d.%d, %d SMs, %.1f GiB (%.1f free)",
		c.Path(), v, n, name, major, minor, sms,
		float64(total)/(1<<30), float64(free)/(1<<30))
	if _, err := c.Device(n); !errors.Is(err, ErrInvalidDevice) {
		t.Errorf("Device(%d) = %v, want ErrInvalidDevice", n, err)
	}
}

func TestGPUCopyRoundTrip(t *testing.T) {
	x := needGPU(t)
	lock(t, x)
	const n = 1<<20 + 3
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i)*0.5 - 7
	}
	p, err := x.MemAlloc(n * 4)
	must(t, err)
	defer x.MemFree(p)
	must(t, x.CopyHtoD(p, src))
	dst := make([]float32, n)
	must(t, x.CopyDtoH(dst, p))
	for i := range src {
		if dst[i] != src[i] {
			t.Fatalf("float32 round trip [%d] = %v, want %v", i, dst[i], src[i])
		}
	}
	b := []byte("hello, device")
	q, err := x.MemAlloc(uint64(len(b)))
	must(t, err)
	defer x.MemFree(q)
	must(t, x.CopyHtoDBytes(q, b))
	got := make([]byte, len(b))
	must(t, x.CopyDtoHBytes(got, q))
	if string(got) != string(b) {
		t.Fatalf("byte round trip = %q", got)
	}
	// Device to device on the legacy stream, then read back.
	r, err := x.MemAlloc(n * 4)
	must(t, err)
	defer x.MemFree(r)
	must(t, x.CopyDtoDAsync(r, p, n*4, 0))
	clear(dst)
	must(t, x.CopyDtoH(dst, r))
	if dst[n-1] != src[n-1] || dst[0] != src[0] {
		t.Fatal("CopyDtoDAsync mismatch")
	}
	if p0, err := x.MemAlloc(0); p0 != 0 || err != nil {
		t.Errorf("MemAlloc(0) = %v, %v", p0, err)
	}
	must(t, x.MemFree(0))
}

func TestGPUOutOfMemory(t *testing.T) {
	x := needGPU(t)
	lock(t, x)
	_, err := x.MemAlloc(1 << 62)
	if !errors.Is(err, ErrOutOfMemory) || IsDeviceLost(err) {
		t.Fatalf("MemAlloc(2^62) = %v", err)
	}
	if !strings.HasPrefix(err.Error(), "driver: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: ") {
		t.Errorf("text = %q", err)
	}
	if x.Lost() != nil {
		t.Fatal("out of memory marked the device lost")
	}
}

func TestGPUMemset(t *testing.T) {
	x := needGPU(t)
	lock(t, x)
	const n = 4099
	p, err := x.MemAlloc(n * 4)
	must(t, err)
	defer x.MemFree(p)
	must(t, x.MemsetD32Async(p, math.Float32bits(-2.25), n, 0))
	must(t, x.MemsetD32Async(p+4, 0, 2, 0))
	must(t, x.Synchronize())
	got := make([]float32, n)
	must(t, x.CopyDtoH(got, p))
	for i, v := range got {
		want := float32(-2.25)
		if i == 1 || i == 2 {
			want = 0
		}
		if v != want {
			t.Fatalf("[%d] = %v, want %v", i, v, want)
		}
	}
}

func TestGPULaunch(t *testing.T) {
	x := needGPU(t)
	lock(t, x)
	for _, n := range []int{1, 31, 32, 33, 255, 256, 257, 4099, 1<<20 + 3} {
		host := make([]float32, n)
		for i := range host {
			host[i] = float32(i % 1000)
		}
		p, err := x.MemAlloc(uint64(n+1) * 4)
		must(t, err)
		must(t, x.MemsetD32Async(p, math.Float32bits(42), uint64(n+1), 0)) // guard word at [n]
		must(t, x.CopyHtoD(p, host))
		var args Args
		args.Ptr(p).U32(uint32(n))
		block := uint32(256)
		grid := (uint32(n) + block - 1) / block
		must(t, x.Launch(gpu.addOne, [3]uint32{grid, 1, 1}, [3]uint32{block, 1, 1}, 0, 0, &args))
		got := make([]float32, n+1)
		must(t, x.CopyDtoH(got, p))
		for i := 0; i < n; i++ {
			if got[i] != host[i]+1 {
				t.Fatalf("n=%d: [%d] = %v, want %v", n, i, got[i], host[i]+1)
			}
		}
		if got[n] != 42 {
			t.Fatalf("n=%d: guard word overwritten: %v", n, got[n])
		}
		must(t, x.MemFree(p))
	}
	mt, err := gpu.addOne.MaxThreadsPerBlock()
	must(t, err)
	if mt < 256 {
		t.Errorf("MaxThreadsPerBlock = %d", mt)
	}
	must(t, gpu.addOne.SetMaxDynamicSharedBytes(1024))
}

func TestGPUArgsTypes(t *testing.T) {
	x := needGPU(t)
	lock(t, x)
	p, err := x.MemAlloc(16)
	must(t, err)
	defer x.MemFree(p)
	args := new(Args)
	args.Ptr(p).U32(7).F32(2.5).U64(1 << 40).I32(-3)
	must(t, x.Launch(gpu.packF, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0, args))
	got := make([]float32, 4)
	must(t, x.CopyDtoH(got, p))
	if want := []float32{7, 2.5, 1 << 40, -3}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("pack_args wrote %v, want %v", got, want)
	}
}

func TestGPUJITErrorLog(t *testing.T) {
	x := needGPU(t)
	lock(t, x)
	_, err := x.LoadModule([]byte(brokenPTX))
	if err == nil {
		t.Fatal("broken PTX loaded")
	}
	var e *Error
	if !errors.As(err, &e) || e.Call != "cuModuleLoadDataEx" || !strings.Contains(e.Detail, "line 6") ||
		!strings.Contains(e.Detail, "error") {
		t.Fatalf("JIT error without its log: %v", err)
	}
	if IsDeviceLost(err) || x.Lost() != nil {
		t.Fatal("JIT failure marked the device lost")
	}
	t.Log(err)
	if _, err := gpu.mod.Function("no_such_kernel"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing kernel: %v", err)
	}
	// The loaded module can be unloaded and loaded again.
	m, err := x.LoadModule([]byte(testPTX))
	must(t, err)
	must(t, x.UnloadModule(m))
}

func TestGPUStreamsAndEvents(t *testing.T) {
	x := needGPU(t)
	lock(t, x)
	const n = 1 << 22
	s, err := x.NewStream(true)
	must(t, err)
	defer x.DestroyStream(s)
	start, err := x.NewEvent(true)
	must(t, err)
	defer x.DestroyEvent(start)
	end, err := x.NewEvent(true)
	must(t, err)
	defer x.DestroyEvent(end)
	p, err := x.MemAlloc(n * 4)
	must(t, err)
	defer x.MemFree(p)
	q, err := x.MemAlloc(n * 4)
	must(t, err)
	defer x.MemFree(q)

	must(t, x.RecordEvent(start, s))
	must(t, x.MemsetD32Async(p, math.Float32bits(1), n, s))
	args := new(Args).Ptr(p).U32(n)
	const reps = 20
	for range reps {
		must(t, x.Launch(gpu.addOne, [3]uint32{n / 256, 1, 1}, [3]uint32{256, 1, 1}, 0, s, args))
	}
	must(t, x.CopyDtoDAsync(q, p, n*4, s))
	must(t, x.RecordEvent(end, s))
	_, err = x.QueryEvent(end)
	must(t, err)
	must(t, x.SynchronizeEvent(end))
	done, err := x.QueryEvent(end)
	must(t, err)
	if !done {
		t.Error("QueryEvent false after SynchronizeEvent")
	}
	ms, err := x.ElapsedMs(start, end)
	must(t, err)
	if ms <= 0 || ms > 10000 {
		t.Errorf("ElapsedMs = %v", ms)
	}
	must(t, x.StreamSynchronize(s))
	got := make([]float32, n)
	must(t, x.CopyDtoH(got, q))
	for i := 0; i < n; i += 4097 {
		if got[i] != 1+reps {
			t.Fatalf("[%d] = %v, want %v", i, got[i], 1+reps)
		}
	}
	t.Logf("%d launches over %d floats: %.3f ms", reps, n, ms)

	noTiming, err := x.NewEvent(false)
	must(t, err)
	must(t, x.RecordEvent(noTiming, s))
	must(t, x.SynchronizeEvent(noTiming))
	if _, err := x.ElapsedMs(start, noTiming); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("ElapsedMs with a non-timing event: %v", err)
	}
	must(t, x.DestroyEvent(noTiming))
}

// TestGPUManyGoroutines has many goroutines share the context, each locking
// its own OS thread per cycle.
func TestGPUManyGoroutines(t *testing.T) {
	x := needGPU(t)
	const workers, cycles = 32, 200
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- worker(x, w, cycles)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func worker(x *Context, w, cycles int) error {
	args := new(Args)
	for c := range cycles {
		n := 1 + (w*7919+c*104729)%5000
		host := make([]float32, n)
		for i := range host {
			host[i] = float32(w*1000 + c + i)
		}
		if err := x.Lock(); err != nil {
			return err
		}
		err := func() error {
			defer x.Unlock()
			p, err := x.MemAlloc(uint64(n) * 4)
			if err != nil {
				return err
			}
			defer x.MemFree(p)
			if err := x.CopyHtoD(p, host); err != nil {
				return err
			}
			args.Reset().Ptr(p).U32(uint32(n))
			if err := x.Launch(gpu.addOne, [3]uint32{uint32(n+127) / 128, 1, 1}, [3]uint32{128, 1, 1}, 0, 0, args); err != nil {
				return err
			}
			return x.CopyDtoH(host, p)
		}()
		if err != nil {
			return err
		}
		for i, v := range host {
			if v != float32(w*1000+c+i)+1 {
				return errors.New("wrong result from a concurrent worker")
			}
		}
	}
	return nil
}

func TestGPULaunchNoAlloc(t *testing.T) {
	x := needGPU(t)
	args := new(Args)
	allocs := testing.AllocsPerRun(1000, func() {
		if err := x.Lock(); err != nil {
			t.Fatal(err)
		}
		args.Reset()
		if err := x.Launch(gpu.empty, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 0, args); err != nil {
			t.Fatal(err)
		}
		x.Unlock()
	})
	lock(t, x)
	must(t, x.Synchronize())
	if allocs != 0 {
		t.Errorf("Lock+Launch+Unlock allocates %v times", allocs)
	}
}

func BenchmarkLaunchEmpty(b *testing.B) {
	x := needGPU(b)
	args := new(Args)
	b.ReportAllocs()
	for b.Loop() {
		if err := x.Lock(); err != nil {
			b.Fatal(err)
		}
		if err := x.Launch(gpu.empty, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 0, args); err != nil {
			b.Fatal(err)
		}
		x.Unlock()
	}
	b.StopTimer()
	lock(b, x)
	must(b, x.Synchronize())
}

// TestGPULockBindsThread clears the current context of a locked thread (cuCtxSetCurrent(NULL))
// and checks that Lock makes the context current again: allocation, launch and copies work.
func TestGPULockBindsThread(t *testing.T) {
	x := needGPU(t)
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if r := sysCallSlice(x.c.fn.ctxSetCurrent, []uintptr{0}); r != 0 {
			done <- Result(int32(r))
			return
		}
		if err := x.Lock(); err != nil {
			done <- err
			return
		}
		defer x.Unlock()
		p, err := x.MemAlloc(4)
		if err != nil {
			done <- err
			return
		}
		defer x.MemFree(p)
		host := []float32{41}
		args := new(Args).Ptr(p).U32(1)
		if err := x.CopyHtoD(p, host); err == nil {
			err = x.Launch(gpu.addOne, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 0, args)
			if err == nil {
				err = x.CopyDtoH(host, p)
			}
			if err == nil && host[0] != 42 {
				err = fmt.Errorf("add_one gave %v, want 42", host[0])
			}
			done <- err
			return
		}
		done <- err
	}()
	must(t, <-done)
}

// BenchmarkDriverCall times a trivial driver call (cuDriverGetVersion) through purego: the cost
// of one Go -> C call, against launch.c's c_call_ns for the same call from C.
func BenchmarkDriverCall(b *testing.B) {
	x := needGPU(b)
	v := new([2]uintptr) // v[0]: the int result; v[1]: the argument block (heap memory)
	v[1] = uintptr(unsafe.Pointer(&v[0]))
	args := v[1:]
	b.ReportAllocs()
	for b.Loop() {
		if r := sysCallSlice(x.c.fn.driverGetVersion, args); r != 0 {
			b.Fatal(Result(int32(r)))
		}
	}
	runtime.KeepAlive(v)
}

func BenchmarkLockUnlock(b *testing.B) {
	x := needGPU(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := x.Lock(); err != nil {
			b.Fatal(err)
		}
		x.Unlock()
	}
}

func TestGPUCUFFT(t *testing.T) {
	x := needGPU(t)
	f, err := LoadCUFFT()
	if err != nil {
		t.Skipf("cuFFT not available: %v", err)
	}
	lock(t, x)
	const n, batch = 64, 3
	const nc = n/2 + 1
	host := make([]float32, n*batch)
	for i := range host {
		host[i] = float32(math.Sin(float64(i)*0.37)) + float32(i%5)
	}
	in, err := x.MemAlloc(n * batch * 4)
	must(t, err)
	defer x.MemFree(in)
	spec, err := x.MemAlloc(nc * batch * 8)
	must(t, err)
	defer x.MemFree(spec)
	must(t, x.CopyHtoD(in, host))

	fwd, err := f.PlanMany1D(n, batch, FFTR2C, 1, n, 1, nc)
	must(t, err)
	defer f.Destroy(fwd)
	inv, err := f.PlanMany1D(n, batch, FFTC2R, 1, nc, 1, n)
	must(t, err)
	defer f.Destroy(inv)
	s, err := x.NewStream(true)
	must(t, err)
	defer x.DestroyStream(s)
	must(t, f.SetStream(fwd, s))
	must(t, f.SetStream(inv, s))
	must(t, f.ExecR2C(fwd, in, spec))
	// DC term of each batch is the sum of its inputs.
	must(t, x.StreamSynchronize(s))
	c := make([]float32, nc*batch*2)
	must(t, x.CopyDtoH(c, spec))
	for b := range batch {
		sum := 0.0
		for i := range n {
			sum += float64(host[b*n+i])
		}
		if math.Abs(float64(c[b*nc*2])-sum) > 1e-3*math.Max(1, math.Abs(sum)) {
			t.Errorf("batch %d DC = %v, want %v", b, c[b*nc*2], sum)
		}
	}
	must(t, f.ExecC2R(inv, spec, in))
	must(t, x.StreamSynchronize(s))
	back := make([]float32, n*batch)
	must(t, x.CopyDtoH(back, in))
	for i := range host {
		if d := math.Abs(float64(back[i]/n - host[i])); d > 1e-5*8 {
			t.Fatalf("[%d] round trip %v, want %v", i, back[i]/n, host[i])
		}
	}
	if _, err := f.PlanMany1D(0, 1, FFTR2C, 1, 1, 1, 1); !errors.Is(err, FFTInvalidSize) {
		t.Errorf("n=0 plan: %v", err)
	}
	v, _ := f.Version()
	t.Logf("%s version %d", f.Path(), v)
}

// TestGPUDeviceLost runs a kernel that writes through a null pointer in a
// child process (a sticky error ends CUDA for the whole process) and checks
// the error and that later calls are refused.
func TestGPUDeviceLost(t *testing.T) {
	if os.Getenv("TORCHLEAN_DRIVER_LOST_CHILD") == "1" {
		deviceLostChild(t)
		return
	}
	needGPU(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUDeviceLost$", "-test.v")
	cmd.Env = append(os.Environ(), "TORCHLEAN_DRIVER_LOST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CHILD-OK") {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "lost:") {
			t.Log(strings.TrimSpace(l))
		}
	}
}

func deviceLostChild(t *testing.T) {
	x := needGPU(t)
	lock(t, x)
	args := new(Args).Ptr(0).U32(1)
	must(t, x.Launch(gpu.addOne, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0, args))
	err := x.Synchronize()
	if !IsDeviceLost(err) {
		t.Fatalf("null write: Synchronize = %v, want a device-lost error", err)
	}
	t.Logf("lost: %v", err)
	if _, err := x.MemAlloc(4); !IsDeviceLost(err) {
		t.Fatalf("MemAlloc after loss = %v", err)
	} else {
		t.Logf("lost: %v", err)
	}
	if err := x.Launch(gpu.empty, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0, args); !IsDeviceLost(err) {
		t.Fatalf("Launch after loss = %v", err)
	}
	if err := x.Lost(); !IsDeviceLost(err) {
		t.Fatalf("Lost() = %v", err)
	}
	t.Log("CHILD-OK")
}

// Staged uploads: more uploads than slots (so slots are reused after their events), the source
// overwritten right after each upload, one upload spread over the whole ring, one larger than
// the ring, and uint32 data; every destination must hold what was uploaded into it.
func TestGPUStaging(t *testing.T) {
	x := needGPU(t)
	lock(t, x)
	s, err := x.NewStream(true) // non-blocking: nothing of the legacy stream orders these copies
	must(t, err)
	defer x.DestroyStream(s)
	st, err := x.NewStaging(3, 4096, s)
	must(t, err)
	const uploads, n = 10, 1000
	src := make([]float32, n)
	var bufs []DevicePtr
	for k := range uploads {
		p, err := x.MemAlloc(n * 4)
		must(t, err)
		defer x.MemFree(p)
		for i := range src {
			src[i] = float32(k*n + i)
		}
		must(t, st.UploadF32(p, src))
		clear(src) // the slot holds the data now
		bufs = append(bufs, p)
	}
	big := make([]float32, 3000) // 12000 bytes: chunks in the 3 slots, the last one partial
	for i := range big {
		big[i] = -float32(i)
	}
	pb, err := x.MemAlloc(uint64(len(big)) * 4)
	must(t, err)
	defer x.MemFree(pb)
	must(t, st.UploadF32(pb, big))
	wantBig := append([]float32(nil), big...)
	clear(big)                    // the slots hold the data now
	huge := make([]float32, 5000) // 20000 bytes > the ring: a pageable copy on the stream
	for i := range huge {
		huge[i] = float32(i) + 0.5
	}
	ph, err := x.MemAlloc(uint64(len(huge)) * 4)
	must(t, err)
	defer x.MemFree(ph)
	must(t, st.UploadF32(ph, huge))
	gotHuge := make([]float32, len(huge))
	must(t, x.CopyDtoHAsync(gotHuge, ph, s))
	for i := range huge {
		if gotHuge[i] != huge[i] {
			t.Fatalf("upload larger than the ring, element %d = %v", i, gotHuge[i])
		}
	}
	idx := []uint32{7, 0, 1 << 31, 42}
	pi, err := x.MemAlloc(16)
	must(t, err)
	defer x.MemFree(pi)
	must(t, st.UploadU32(pi, idx))
	got := make([]float32, n)
	for k, p := range bufs {
		must(t, x.CopyDtoHAsync(got, p, s))
		for i, v := range got {
			if v != float32(k*n+i) {
				t.Fatalf("upload %d element %d = %v, want %v", k, i, v, float32(k*n+i))
			}
		}
	}
	gotBig := make([]float32, len(big))
	must(t, x.CopyDtoHAsync(gotBig, pb, s))
	for i := range wantBig {
		if gotBig[i] != wantBig[i] {
			t.Fatalf("large upload element %d = %v", i, gotBig[i])
		}
	}
	raw := make([]byte, 16)
	must(t, x.StreamSynchronize(s)) // the legacy stream's copy below is not ordered after s
	must(t, x.CopyDtoHBytes(raw, pi))
	for i, want := range idx {
		if v := uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24; v != want {
			t.Fatalf("index %d = %d, want %d", i, v, want)
		}
	}
	must(t, st.Close())
	must(t, st.Close())
	if err := st.UploadF32(bufs[0], src[:1]); err == nil {
		t.Fatal("upload after Close: no error")
	}
}
