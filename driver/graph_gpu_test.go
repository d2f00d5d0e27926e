package driver

import (
	"errors"
	"testing"
)

// TestGPUGraph captures three add_one launches on a non-blocking stream, replays them five
// times and checks the values; a synchronization inside a capture invalidates it.
func TestGPUGraph(t *testing.T) {
	x := needGPU(t)
	lock(t, x)
	if err := x.CUDA().GraphsSupported(); err != nil {
		t.Fatal(err)
	}
	s, err := x.NewStream(true)
	must(t, err)
	defer x.DestroyStream(s)
	const n = 1000
	p, err := x.MemAlloc(4 * n)
	must(t, err)
	defer x.MemFree(p)
	must(t, x.MemsetD32Async(p, 0, n, s))
	must(t, x.BeginCapture(s, CaptureRelaxed))
	var args Args
	args.Ptr(p).U32(n)
	for range 3 {
		must(t, x.Launch(gpu.addOne, [3]uint32{(n + 255) / 256, 1, 1}, [3]uint32{256, 1, 1}, 0, s, &args))
	}
	g, err := x.EndCapture(s)
	must(t, err)
	defer x.DestroyGraph(g)
	e, err := x.Instantiate(g, 0)
	must(t, err)
	defer x.DestroyGraphExec(e)
	must(t, x.StreamSynchronize(s))
	got := make([]float32, n)
	must(t, x.CopyDtoHAsync(got, p, s))
	if got[0] != 0 {
		t.Fatalf("capture ran the kernels: %v", got[0])
	}
	for range 5 {
		must(t, x.LaunchGraph(e, s))
	}
	must(t, x.CopyDtoHAsync(got, p, s))
	for i, v := range got {
		if v != 15 {
			t.Fatalf("[%d] = %v after 5 replays of 3 increments", i, v)
		}
	}
	must(t, x.UpdateGraph(e, g))

	must(t, x.BeginCapture(s, CaptureRelaxed))
	if err := x.StreamSynchronize(s); err == nil {
		t.Error("StreamSynchronize inside a capture succeeded")
	}
	if _, err := x.EndCapture(s); !errors.Is(err, ErrStreamCaptureInvalidated) {
		t.Errorf("EndCapture after an illegal call: %v", err)
	}
	if err := x.Lost(); err != nil {
		t.Fatalf("an invalidated capture lost the device: %v", err)
	}
}
