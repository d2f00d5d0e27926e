//go:build linux && (amd64 || arm64) && !nocuda && !race

package ops

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/driver"
)

// TestFakeGraphCapture captures a region on the fake driver: the call sequence, the region's
// allocations from the graph's pool, replays that run the recorded kernels on live memory, flat
// memory over many launches, and Close giving the pool back.
func TestFakeGraphCapture(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{})
	g := d.be.(*cudaBackend)
	if err := d.CanCapture(); err != nil {
		t.Fatal(err)
	}
	x, err := Full(d, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Collect(true); err != nil {
		t.Fatal(err)
	}
	baseLive, baseFake := d.Stats().LiveBytes, f.LiveBytes()
	expBefore := f.Launched()[expOp.kernel.Name]

	var z *Buffer
	graph, err := d.Capture(func() error {
		y, err := Exp(x)
		if err != nil {
			return err
		}
		z, err = Add(y, x)
		y.Release() // back to the pool, not to the general cache
		if err != nil {
			return err
		}
		w, err := Exp(z) // may reuse y's block: same order at every replay
		if err != nil {
			return err
		}
		w.Release()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.Launched()[expOp.kernel.Name] != expBefore {
		t.Errorf("the capture ran exp")
	}
	if g.pools[z.mem.ptr] == nil || graph.PoolBytes() == 0 {
		t.Fatalf("the region's result is not in the graph's pool (pool %d bytes)", graph.PoolBytes())
	}
	if g.cachedBytes() != 0 {
		t.Errorf("cached bytes %d after the capture: a pool block went to the general cache", g.cachedBytes())
	}
	want := []string{"begin capture (mode 2)", "end capture: 3 commands", "instantiate", "destroy graph"}
	if got := f.GraphEvents(); !slices.Equal(got, want) {
		t.Errorf("graph calls %q, want %q", got, want)
	}

	live, fake, pool := d.Stats().LiveBytes, f.LiveBytes(), graph.PoolBytes()
	for range 2000 {
		if err := graph.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := f.GraphReplays(); n != 2000 {
		t.Errorf("replays %d, want 2000", n)
	}
	if n := f.Launched()[expOp.kernel.Name] - expBefore; n != 4000 {
		t.Errorf("exp ran %d times in 2000 replays, want 4000", n)
	}
	if d.Stats().LiveBytes != live || f.LiveBytes() != fake || graph.PoolBytes() != pool {
		t.Errorf("memory grew over the replays: live %d -> %d, device %d -> %d, pool %d -> %d",
			live, d.Stats().LiveBytes, fake, f.LiveBytes(), pool, graph.PoolBytes())
	}

	z.Release() // after the capture: back to the pool while the graph lives
	if g.cachedBytes() != 0 {
		t.Errorf("a released pool buffer went to the general cache while its graph lives")
	}
	if err := graph.Launch(); err != nil {
		t.Fatal(err)
	}
	if err := graph.Close(); err != nil {
		t.Fatal(err)
	}
	if err := graph.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := graph.Launch(); err == nil {
		t.Error("Launch after Close succeeded")
	}
	if g.cachedBytes() != pool || len(g.pools) != 0 {
		t.Errorf("after Close: cached %d bytes, want the pool's %d; %d blocks still pooled", g.cachedBytes(), pool, len(g.pools))
	}
	if err := d.Collect(true); err != nil {
		t.Fatal(err)
	}
	if d.Stats().LiveBytes != baseLive || f.LiveBytes() != baseFake {
		t.Errorf("after Close and Collect: live %d (was %d), device %d (was %d)", d.Stats().LiveBytes, baseLive, f.LiveBytes(), baseFake)
	}
	x.Release()
	checkFake(t, f)
}

// TestFakeCaptureRefusals: host synchronizations, uploads and library calls inside a capture are
// errors naming the call, returned at once (no hang), and the device works afterwards.
func TestFakeCaptureRefusals(t *testing.T) {
	d, f := newFakeDevice(t, driver.FakeOptions{})
	g := d.be.(*cudaBackend)
	x, err := Full(d, 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	for name, tc := range map[string]struct {
		call func() error
		want string
	}{
		"download": {func() error { _, err := x.Float32s(); return err }, "ops: download: a download is not allowed inside a CUDA graph capture"},
		"sync":     {d.Sync, "ops: Device.Sync is not allowed"},
		"collect":  {func() error { return d.Collect(true) }, "Device.Collect"},
		"upload":   {func() error { _, err := FromFloat32(d, []float32{1}); return err }, "an upload is not allowed"},
		"Upload":   {func() error { return Upload(x, make([]float32, 10)) }, "ops.Upload"},
		"library": {func() error {
			return g.libraryCall("cufftExecR2C", func(*driver.Context, driver.Stream) error { return nil })
		}, "ops: cufftExecR2C is not allowed inside a CUDA graph capture: this library call is not known to be capturable"},
		"nested": {func() error { _, err := d.Capture(func() error { return nil }); return err }, "captures do not nest"},
	} {
		t.Run(name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := d.Capture(func() error {
					y, err := Exp(x)
					if err != nil {
						return err
					}
					defer y.Release()
					return tc.call()
				})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one containing %q", err, tc.want)
				}
				if name != "nested" && !errors.Is(err, ErrCapturing) {
					t.Errorf("%v does not wrap ErrCapturing", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the capture hangs")
			}
			if f.Capturing() || g.capturing() != nil {
				t.Fatal("the stream is still capturing")
			}
			y, err := Exp(x)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := y.Float32s(); err != nil {
				t.Fatalf("eager work after the failed capture: %v", err)
			}
			y.Release()
		})
	}
	if gs, es := f.LiveGraphs(); gs != 0 || es != 0 {
		t.Errorf("failed captures left %d graphs and %d executable graphs", gs, es)
	}
	checkFake(t, f)
}

// TestFakeCaptureOptimizerParams: an optimizer step whose hyperparameters changed since its last
// upload uploads them, which a capture refuses; SetParams before the capture (what autograd's
// Session.Capture does with a schedule's new learning rate) leaves nothing to upload inside it.
func TestFakeCaptureOptimizerParams(t *testing.T) {
	d, _ := newFakeDevice(t, driver.FakeOptions{})
	param, err := Full(d, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer param.Release()
	grad, err := Full(d, 64, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	defer grad.Release()
	sgd, err := NewSGD(d)
	if err != nil {
		t.Fatal(err)
	}
	defer sgd.Release()
	if err := sgd.Step(param, grad, nil, SGDParams{LR: 0.1}, true); err != nil {
		t.Fatal(err)
	}
	step := func(lr float64) error {
		return sgd.Step(param, grad, nil, SGDParams{LR: lr}, false)
	}
	if _, err := d.Capture(func() error { return step(0.09) }); !errors.Is(err, ErrCapturing) {
		t.Fatalf("a step with a new learning rate inside a capture: %v, want ErrCapturing (its upload)", err)
	}
	if err := sgd.SetParams(SGDParams{LR: 0.08}); err != nil {
		t.Fatal(err)
	}
	graph, err := d.Capture(func() error { return step(0.08) })
	if err != nil {
		t.Fatalf("a step with the learning rate set before the capture: %v", err)
	}
	if err := graph.Close(); err != nil {
		t.Fatal(err)
	}
}
