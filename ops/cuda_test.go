package ops

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/driver"
	"github.com/torchlean-go/torchlean/internal/testenv"
)

func openCUDAForTest(t *testing.T) *Device {
	t.Helper()
	d, err := Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	return d
}

// TestOutOfMemory asks for far more than the device has: a clear error, no crash, and the
// device stays usable.
func TestOutOfMemory(t *testing.T) {
	d := openCUDAForTest(t)
	before := d.Stats()
	_, err := Zeros(d, testenv.Wide(1<<42)) // 16 TiB
	if !errors.Is(err, driver.ErrOutOfMemory) || !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("huge allocation: %v, want out of memory", err)
	}
	t.Logf("error: %v", err)
	if after := d.Stats(); after.LiveBytes != before.LiveBytes {
		t.Errorf("live bytes changed by a failed allocation: %d -> %d", before.LiveBytes, after.LiveBytes)
	}
	x, err := Full(d, 3, 2)
	if got := download(t, x, err); got[2] != 2 {
		t.Errorf("device unusable after out of memory: %v", got)
	}
}

// TestManyGoroutines drives one device from many goroutines (each op locks its OS thread and
// makes the context current) and checks every result against the CPU.
func TestManyGoroutines(t *testing.T) {
	d := openCUDAForTest(t)
	base := d.Stats().LiveBytes
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 32 {
		wg.Go(func() {
			for i := range 50 {
				n := 1000 + 37*w + i
				host := mirrorInput(n, 0, true, nil)
				want, err := sumOn(CPU(), host)
				if err != nil {
					errs <- err
					return
				}
				got, err := sumOn(d, host)
				if err != nil {
					errs <- err
					return
				}
				if math.Float32bits(got) != math.Float32bits(want) {
					errs <- fmt.Errorf("worker %d iteration %d: gpu %v cpu %v", w, i, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if live := d.Stats().LiveBytes; live != base {
		t.Errorf("live bytes %d after the workers, %d before", live, base)
	}
}

// sumOn uploads x and returns sum(exp(x) * x) computed on d.
func sumOn(d *Device, x []float32) (float32, error) {
	b, err := FromFloat32(d, x)
	if err != nil {
		return 0, err
	}
	defer b.Release()
	e, err := Exp(b)
	if err != nil {
		return 0, err
	}
	defer e.Release()
	m, err := Mul(e, b)
	if err != nil {
		return 0, err
	}
	defer m.Release()
	s, err := Sum(m)
	if err != nil {
		return 0, err
	}
	defer s.Release()
	v, err := s.Float32s()
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// TestLaunchModes (GPU) runs the same chain of ops through the device's launch queue and through
// a handle that calls the driver from each op's goroutine: identical bits, both equal to the CPU.
func TestLaunchModes(t *testing.T) {
	d := openCUDAForTest(t)
	if d.be.(*cudaBackend).queue == nil {
		t.Skip("the device has no launch queue (TORCHLEAN_LAUNCH=sync or GOMAXPROCS < 2)")
	}
	host := mirrorInput(100003, 0, true, nil)
	want, err := sumOn(CPU(), host)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []*Device{d, syncHandle(t, d)} {
		for range 3 {
			got, err := sumOn(h, host)
			if err != nil {
				t.Fatalf("%s: %v", h, err)
			}
			if math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("%s: %v, cpu %v", h, got, want)
			}
		}
	}
}

// TestLaunchQueueRefused (GPU) queues a launch the driver refuses (a block of 2048 threads) on a
// queued handle of its own: Sync and every later op of that handle report it (later commands
// are dropped), while the device's other handles keep working.
func TestLaunchQueueRefused(t *testing.T) {
	d := openCUDAForTest(t)
	h := handleOn(t, d, " (refused)", 0, true)
	hg := h.be.(*cudaBackend)
	x, err := Full(h, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	err = hg.packed(func(p *argPack) error {
		p.ptr(x.mem)
		p.ptr(x.mem)
		p.u64(4)
		p.f32(2)
		return hg.launch(linear(scaleOp.kernel, 1, 2048), p)
	})
	if err != nil {
		t.Fatalf("queueing: %v (the driver's answer comes later)", err)
	}
	err = h.Sync()
	if !errors.Is(err, driver.ErrInvalidValue) {
		t.Fatalf("Sync after a refused launch: %v, want invalid value", err)
	}
	t.Logf("error: %v", err)
	if _, err := Scale(x, 2); err == nil {
		t.Error("an op after the refused launch succeeded")
	}
	if _, err := x.Float32s(); err == nil {
		t.Error("a download after the refused launch succeeded")
	}
	y, err := Full(d, 3, 2)
	if got := download(t, y, err); got[2] != 2 {
		t.Errorf("the device's own handle is unusable: %v", got)
	}
}

// TestCollectWhileQueued: Collect(true) from one goroutine while others queue ops and release
// their buffers must free only blocks whose commands were issued and finished (it once freed
// every block cached when it got there, including ones released after its wait, whose commands
// were still queued: an illegal address on the device). Every result is checked.
func TestCollectWhileQueued(t *testing.T) {
	d := openCUDAForTest(t)
	stop := make(chan struct{})
	wait := untilStopped(4, stop, func(w, i int) error {
		n := 4096 + 64*w + i%7
		x, err := Full(d, n, float64(w))
		if err != nil {
			return err
		}
		y, err := Exp(x)
		x.Release()
		if err != nil {
			return err
		}
		defer y.Release()
		if i%64 == 0 { // check a result now and then (a download waits for the queue)
			v, err := y.Float32s()
			if err == nil && v[n-1] != cpu.Expf(float32(w)) {
				err = fmt.Errorf("exp(%d) = %v, want %v", w, v[n-1], cpu.Expf(float32(w)))
			}
			if err != nil {
				return fmt.Errorf("worker %d, op %d: %w", w, i, err)
			}
		}
		return nil
	})
	for range 300 {
		if err := d.Collect(true); err != nil {
			t.Errorf("Collect: %v", err)
			break
		}
	}
	close(stop)
	if err := wait(); err != nil {
		t.Error(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("device after the run: %v", err)
	}
}

// untilStopped runs workers goroutines that call op(w, i) for i = 0, 1, ... until stop is closed
// or op fails, and returns a function that waits for them and returns the first failure.
func untilStopped(workers int, stop chan struct{}, op func(w, i int) error) (wait func() error) {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := op(w, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	return func() error {
		wg.Wait()
		close(errs)
		return <-errs
	}
}
