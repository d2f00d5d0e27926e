//go:build linux && (amd64 || arm64) && !nocuda && !race

package ops

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/torchlean-go/torchlean/driver"
)

// The cuFFT tier on the fake device (driver.Fake, as fakegpu_test.go) with a stand-in libcufft:
// what can be checked without a GPU (the calls, their order and operands, the cache, the
// fallbacks); the numbers are TestCUFFT's, on a GPU.

// fakeCUFFT is a stand-in libcufft for the fake device: plans are numbers, executions are
// recorded, failures are injected per length.
type fakeCUFFT struct {
	mu        sync.Mutex
	next      driver.FFTPlan
	live      map[driver.FFTPlan]cufftKey
	streams   map[driver.FFTPlan]driver.Stream
	planCalls []string
	execs     []fakeExec
	destroyed []cufftKey
	fail      map[int]error // length -> the error of PlanMany1D (once, for AllocFailed)
}

type fakeExec struct {
	key     cufftKey
	in, out driver.DevicePtr
}

const fakeCUFFTWork = 4096

func newFakeCUFFT() *fakeCUFFT {
	return &fakeCUFFT{live: map[driver.FFTPlan]cufftKey{}, streams: map[driver.FFTPlan]driver.Stream{}, fail: map[int]error{}}
}

func (f *fakeCUFFT) PlanMany1D(n, batch int, kind driver.FFTKind, istride, idist, ostride, odist int) (driver.FFTPlan, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.planCalls = append(f.planCalls, fmt.Sprintf("%d %d %v %d %d %d %d", n, batch, kind, istride, idist, ostride, odist))
	if err := f.fail[n]; err != nil {
		if errors.Is(err, driver.FFTAllocFailed) {
			delete(f.fail, n)
		}
		return 0, err
	}
	f.next++
	f.live[f.next] = cufftKey{n: n, batch: batch, inverse: kind == driver.FFTC2R}
	return f.next, nil
}

func (f *fakeCUFFT) SetStream(p driver.FFTPlan, s driver.Stream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streams[p] = s
	return nil
}

func (f *fakeCUFFT) WorkSize(p driver.FFTPlan) (int64, error) { return fakeCUFFTWork, nil }

func (f *fakeCUFFT) exec(p driver.FFTPlan, in, out driver.DevicePtr, inverse bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.live[p]
	if !ok || k.inverse != inverse {
		return &driver.Error{Call: "cufftExec", Err: driver.FFTInvalidPlan}
	}
	f.execs = append(f.execs, fakeExec{k, in, out})
	return nil
}

func (f *fakeCUFFT) ExecR2C(p driver.FFTPlan, in, out driver.DevicePtr) error {
	return f.exec(p, in, out, false)
}

func (f *fakeCUFFT) ExecC2R(p driver.FFTPlan, in, out driver.DevicePtr) error {
	return f.exec(p, in, out, true)
}

func (f *fakeCUFFT) Destroy(p driver.FFTPlan) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.live[p]
	if !ok {
		return &driver.Error{Call: "cufftDestroy", Err: driver.FFTInvalidPlan}
	}
	delete(f.live, p)
	f.destroyed = append(f.destroyed, k)
	return nil
}

func (f *fakeCUFFT) liveCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.live)
}

// fakeCUFFTDevice returns a fake CUDA device whose cuFFT tier uses lib, in fast mode until the
// test ends.
func fakeCUFFTDevice(t *testing.T, lib cufftLib) (*Device, *driver.Fake) {
	d, f := newFakeDevice(t, driver.FakeOptions{})
	d.cufft.ready, d.cufft.lib = true, lib
	old := Deterministic()
	SetDeterministic(false)
	t.Cleanup(func() { SetDeterministic(old) })
	return d, f
}

// TestFakeCUFFT: on a fake CUDA device in fast mode the real transforms run through the cuFFT
// stand-in: plans made with the seeds' layout and bound to the device's stream, the forward
// reading the caller's buffer and writing its result, the inverse reading a masked copy (never
// the caller's buffer) and scaling; telemetry, the LRU bound and Collect; deterministic mode
// never executes cuFFT.
func TestFakeCUFFT(t *testing.T) {
	lib := newFakeCUFFT()
	d, f := fakeCUFFTDevice(t, lib)
	g := d.be.(*cudaBackend)
	base := d.Stats().LiveBytes
	const n, batch = 8, 3
	x := mustBuf(t, d, make([]float32, batch*n))
	spec, err := Rfft1dPacked(x, batch, n)
	if err != nil {
		t.Fatal(err)
	}
	y, err := Irfft1dPacked(spec, batch, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"8 3 R2C 1 8 1 5", "8 3 C2R 1 5 1 8"}; !slices.Equal(lib.planCalls, want) {
		t.Errorf("plans %q, want %q", lib.planCalls, want)
	}
	for p, s := range lib.streams {
		if s != g.stream {
			t.Errorf("plan %d on stream %#x, the device's is %#x", p, s, g.stream)
		}
	}
	if len(lib.execs) != 2 || d.cufft.execs.Load() != 2 {
		t.Fatalf("%d executions (counter %d), want 2", len(lib.execs), d.cufft.execs.Load())
	}
	if e := lib.execs[0]; e.in != x.mem.ptr || e.out != spec.mem.ptr {
		t.Errorf("R2C read %#x and wrote %#x, want x %#x and the result %#x", e.in, e.out, x.mem.ptr, spec.mem.ptr)
	}
	if e := lib.execs[1]; e.in == spec.mem.ptr || e.out == y.mem.ptr {
		t.Errorf("C2R read %#x (spec %#x) and wrote %#x (result %#x): it must read a copy and write a scratch buffer",
			e.in, spec.mem.ptr, e.out, y.mem.ptr)
	}
	if l := f.Launched(); l["masked_fill"] != 1 || l["scale"] != 1 {
		t.Errorf("launches %v: want one masked_fill (the inverse's copy) and one scale", l)
	}
	s := d.Stats()
	wantBytes := int64(2*fakeCUFFTWork + 4*batch*2*(n/2+1))
	if s.CUFFTPlans != 2 || s.CUFFTWorkBytes != wantBytes {
		t.Errorf("Stats: %d cuFFT plans, %d bytes; want 2, %d", s.CUFFTPlans, s.CUFFTWorkBytes, wantBytes)
	}
	if !strings.Contains(s.String(), "cufft_plans=2") {
		t.Errorf("Stats line %q lacks cufft_plans=2", s)
	}
	if tier, why := d.FFTBackend(n, batch); tier != FFTCUFFT || why != "" {
		t.Errorf("FFTBackend = %v %q, want cufft", tier, why)
	}
	releaseAll([]*Buffer{spec, y})

	// Deterministic mode: our FFT, no execution.
	SetDeterministic(true)
	launches := f.Launches()
	spec, err = Rfft1dPacked(x, batch, n)
	if err != nil {
		t.Fatal(err)
	}
	y, err = Irfft1dPacked(spec, batch, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := d.cufft.execs.Load(); got != 2 || len(lib.execs) != 2 {
		t.Errorf("deterministic mode executed cuFFT (counter %d, %d executions)", got, len(lib.execs))
	}
	if f.Launches() == launches {
		t.Error("deterministic mode launched no kernel of our FFT")
	}
	if tier, why := d.FFTBackend(n, batch); tier != FFTExact || why != "deterministic mode" {
		t.Errorf("FFTBackend in deterministic mode = %v %q", tier, why)
	}
	releaseAll([]*Buffer{spec, y})
	SetDeterministic(false)

	// The bound: the least recently used plans are destroyed.
	for k := range cufftPlanLimit + 3 {
		m := 16 + k
		z := mustBuf(t, d, make([]float32, m))
		r, err := Rfft1dPacked(z, 1, m)
		if err != nil {
			t.Fatal(err)
		}
		releaseAll([]*Buffer{z, r})
	}
	if s := d.Stats(); s.CUFFTPlans != cufftPlanLimit || lib.liveCount() != cufftPlanLimit {
		t.Errorf("%d plans cached, %d alive in cuFFT; want the bound %d", s.CUFFTPlans, lib.liveCount(), cufftPlanLimit)
	}
	if len(lib.destroyed) < 3 || lib.destroyed[0] != (cufftKey{n: n, batch: batch}) || lib.destroyed[1] != (cufftKey{n: n, batch: batch, inverse: true}) {
		t.Errorf("destroyed first %v, want the two oldest plans", lib.destroyed)
	}
	if err := d.Collect(true); err != nil {
		t.Fatal(err)
	}
	if s := d.Stats(); s.CUFFTPlans != 0 || s.CUFFTWorkBytes != 0 || lib.liveCount() != 0 {
		t.Errorf("after Collect: %d plans, %d bytes, %d alive in cuFFT", s.CUFFTPlans, s.CUFFTWorkBytes, lib.liveCount())
	}
	x.Release()
	if live := d.Stats().LiveBytes; live != base {
		t.Errorf("live bytes %d, %d before", live, base)
	}
	checkFake(t, f)
}

// TestFakeCUFFTFallback: a plan that fails falls back to our FFT for that size (the reason in
// FFTBackend, the plan not tried again), an allocation failure is retried once, a failure of the
// library disables the tier on the device, and inside a graph capture the tier is refused.
func TestFakeCUFFTFallback(t *testing.T) {
	lib := newFakeCUFFT()
	d, f := fakeCUFFTDevice(t, lib)
	lib.fail[12] = &driver.Error{Call: "cufftPlanMany", Err: driver.FFTInvalidSize}
	lib.fail[10] = &driver.Error{Call: "cufftPlanMany", Err: driver.FFTAllocFailed}
	run := func(n int) {
		t.Helper()
		x := mustBuf(t, d, make([]float32, n))
		y, err := Rfft1dPacked(x, 1, n)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		releaseAll([]*Buffer{x, y})
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	launches := f.Launches()
	run(12)
	run(12)
	if f.Launches() == launches || len(lib.execs) != 0 || len(lib.planCalls) != 1 {
		t.Errorf("a failed plan: %d launches, %d executions, %d plan calls; want our kernels, none, 1",
			f.Launches()-launches, len(lib.execs), len(lib.planCalls))
	}
	if tier, why := d.FFTBackend(12, 1); tier != FFTExact || !strings.Contains(why, "cuFFT plan failed") || !strings.Contains(why, "CUFFT_INVALID_SIZE") {
		t.Errorf("FFTBackend after a failed plan = %v %q", tier, why)
	}
	run(10)
	if len(lib.execs) != 1 || len(lib.planCalls) != 3 {
		t.Errorf("an allocation failure: %d executions, %d plan calls; want 1 and 3 (retried once)", len(lib.execs), len(lib.planCalls))
	}
	// Inside a capture the cuFFT tier is refused, naming the call.
	x := mustBuf(t, d, make([]float32, 10))
	if err := d.CanCapture(); err != nil {
		t.Fatal(err)
	}
	_, err := d.Capture(func() error {
		y, err := Rfft1dPacked(x, 1, 10)
		y.Release()
		return err
	})
	if !errors.Is(err, ErrCapturing) || !strings.Contains(err.Error(), "cufftExecR2C") {
		t.Errorf("cuFFT inside a capture: %v, want ErrCapturing naming cufftExecR2C", err)
	}
	if err := d.Sync(); err != nil {
		t.Errorf("the device after the refused capture: %v", err)
	}
	x.Release()
	lib.fail[14] = &driver.Error{Call: "cufftPlanMany", Err: driver.FFTSetupFailed}
	run(14)
	if tier, why := d.FFTBackend(4096, 3); tier != FFTExact || !strings.Contains(why, "cuFFT disabled") {
		t.Errorf("FFTBackend after a setup failure = %v %q", tier, why)
	}
	if err := d.Collect(true); err != nil {
		t.Fatal(err)
	}
	if lib.liveCount() != 0 {
		t.Errorf("%d plans alive after Collect", lib.liveCount())
	}
	checkFake(t, f)
}

// TestCUFFTMissingLibrary: without libcufft (TORCHLEAN_CUFFT naming no file) the tier falls back
// to our FFT silently, with the loader's error as the reason.
func TestCUFFTMissingLibrary(t *testing.T) {
	old := cufftOpen
	defer func() { cufftOpen = old }()
	t.Setenv("TORCHLEAN_CUFFT", "/nonexistent/libcufft.so.11")
	cufftOpen = func(*cudaBackend) (cufftLib, error) {
		lib, err := driver.LoadCUFFT()
		if err != nil {
			return nil, err
		}
		return lib, nil
	}
	d, f := newFakeDevice(t, driver.FakeOptions{})
	defer SetDeterministic(Deterministic())
	SetDeterministic(false)
	x := mustBuf(t, d, make([]float32, 16))
	y, err := Rfft1dPacked(x, 1, 16)
	if err != nil {
		t.Fatal(err)
	}
	releaseAll([]*Buffer{x, y})
	tier, why := d.FFTBackend(16, 1)
	if tier != FFTExact || !strings.HasPrefix(why, "no cuFFT: ") {
		t.Errorf("FFTBackend without libcufft = %v %q", tier, why)
	}
	if driver.Enabled && !strings.Contains(why, "/nonexistent/libcufft.so.11") {
		t.Errorf("the reason %q does not name the path tried", why)
	}
	if tier, why := CPU().FFTBackend(16, 1); tier != FFTExact || why != "CPU device" {
		t.Errorf("CPU FFTBackend = %v %q", tier, why)
	}
	checkFake(t, f)
}

// TestFakeCUFFTRefusesRealLibrary: a device on the fake driver never hands its addresses to the
// process's real libcufft (on a machine that has one, TestKernelCoverage's fake device ran the
// real cufftExecR2C on fake pointers and crashed): the tier is ours, with the reason.
func TestFakeCUFFTRefusesRealLibrary(t *testing.T) {
	d, _ := newFakeDevice(t, driver.FakeOptions{})
	defer SetDeterministic(Deterministic())
	SetDeterministic(false)
	tierOf, why := d.FFTBackend(1024, 1)
	if tierOf != FFTExact || !strings.Contains(why, "fake driver") {
		t.Errorf("FFTBackend on the fake driver: %v, %q; want our FFT, the fake driver named", tierOf, why)
	}
}
