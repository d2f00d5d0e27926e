package ops

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

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
	_, err := Zeros(d, 1<<42) // 16 TiB
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
