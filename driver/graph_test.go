//go:build linux && (amd64 || arm64) && !nocuda

package driver

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestFakeGraphCapture runs the capture protocol on the Fake: begin, commands recorded and not
// run, status and id, end, instantiate, replays, update in place, destroy.
func TestFakeGraphCapture(t *testing.T) {
	f, x := NewFake(FakeOptions{})
	must(t, x.Lock())
	defer x.Unlock()
	must(t, x.CUDA().GraphsSupported())
	s, err := x.NewStream(true)
	must(t, err)
	p, err := x.MemAlloc(1024)
	must(t, err)
	q, err := x.MemAlloc(1024)
	must(t, err)

	if st, err := x.CaptureStatus(s); err != nil || st != CaptureNone {
		t.Fatalf("status before capture = %v, %v", st, err)
	}
	must(t, x.BeginCapture(s, CaptureRelaxed))
	st, id, err := x.CaptureInfo(s)
	if err != nil || st != CaptureActive || id == 0 {
		t.Fatalf("capture info = %v, %d, %v", st, id, err)
	}
	must(t, x.MemsetD32Async(p, math.Float32bits(1), 256, s))
	must(t, x.CopyDtoDAsync(q, p, 1024, s))
	g, err := x.EndCapture(s)
	must(t, err)
	if st, _ := x.CaptureStatus(s); st != CaptureNone {
		t.Fatalf("status after EndCapture = %v", st)
	}
	e, err := x.Instantiate(g, 0)
	must(t, err)
	for range 3 {
		must(t, x.LaunchGraph(e, s))
	}
	if n := f.GraphReplays(); n != 3 {
		t.Errorf("replays = %d, want 3", n)
	}

	// The same topology updates in place; another one is refused and leaves e as it was.
	must(t, x.BeginCapture(s, CaptureRelaxed))
	must(t, x.MemsetD32Async(q, 0, 256, s))
	must(t, x.CopyDtoDAsync(p, q, 1024, s))
	g2, err := x.EndCapture(s)
	must(t, err)
	must(t, x.UpdateGraph(e, g2))
	must(t, x.BeginCapture(s, CaptureRelaxed))
	must(t, x.MemsetD32Async(q, 0, 256, s))
	g3, err := x.EndCapture(s)
	must(t, err)
	if err := x.UpdateGraph(e, g3); !errors.Is(err, ErrGraphExecUpdateFailure) {
		t.Errorf("update with another topology: %v", err)
	}
	must(t, x.LaunchGraph(e, s))
	for _, h := range []Graph{g, g2, g3} {
		must(t, x.DestroyGraph(h))
	}
	must(t, x.DestroyGraphExec(e))
	if gs, es := f.LiveGraphs(); gs != 0 || es != 0 {
		t.Errorf("live graphs %d, execs %d after destroy", gs, es)
	}
	want := []string{"begin capture (mode 2)", "end capture: 2 commands", "instantiate", "launch", "launch", "launch",
		"begin capture (mode 2)", "end capture: 2 commands", "update",
		"begin capture (mode 2)", "end capture: 1 commands", "update failed", "launch",
		"destroy graph", "destroy graph", "destroy graph", "destroy exec"}
	if got := f.GraphEvents(); !slices.Equal(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
	must(t, x.MemFree(p))
	must(t, x.MemFree(q))
	if v := f.Violations(); len(v) > 0 {
		t.Fatalf("violations: %q", v)
	}
}

// TestFakeGraphIllegal: a synchronization inside a capture fails, invalidates the capture, and
// EndCapture returns no graph; a replay of freed memory is a violation.
func TestFakeGraphIllegal(t *testing.T) {
	f, x := NewFake(FakeOptions{})
	must(t, x.Lock())
	defer x.Unlock()
	s, err := x.NewStream(true)
	must(t, err)
	if err := x.BeginCapture(0, CaptureRelaxed); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("capture of the legacy stream: %v", err)
	}
	must(t, x.BeginCapture(s, CaptureGlobal))
	if err := x.StreamSynchronize(s); !errors.Is(err, ErrStreamCaptureUnsupported) {
		t.Errorf("StreamSynchronize while capturing: %v", err)
	}
	if st, _ := x.CaptureStatus(s); st != CaptureInvalidated {
		t.Errorf("status = %v, want invalidated", st)
	}
	if _, err := x.EndCapture(s); !errors.Is(err, ErrStreamCaptureInvalidated) {
		t.Errorf("EndCapture of an invalidated capture: %v", err)
	}
	if v := f.Violations(); len(v) != 1 || !strings.Contains(v[0], "cuStreamSynchronize") {
		t.Errorf("violations = %q", v)
	}

	p, err := x.MemAlloc(64)
	must(t, err)
	must(t, x.BeginCapture(s, CaptureRelaxed))
	must(t, x.MemsetD32Async(p, 0, 16, s))
	g, err := x.EndCapture(s)
	must(t, err)
	e, err := x.Instantiate(g, 0)
	must(t, err)
	must(t, x.MemFree(p))
	if err := x.LaunchGraph(e, s); !errors.Is(err, ErrIllegalAddress) {
		t.Errorf("replay of freed memory: %v", err)
	}
}

// TestGraphSymbolsMissing: a driver without the graph symbols still works; the graph calls
// return errors naming the symbol.
func TestGraphSymbolsMissing(t *testing.T) {
	c := &CUDA{path: "old"}
	c.gfn.resolveGraph(func(string) uintptr { return 0 })
	err := c.GraphsSupported()
	if !errors.Is(err, ErrMissingSymbol) || !strings.Contains(err.Error(), "cuStreamBeginCapture_v2") {
		t.Errorf("GraphsSupported = %v", err)
	}
	x := &Context{c: c}
	for name, err := range map[string]error{
		"BeginCapture": x.BeginCapture(1, CaptureRelaxed),
		"LaunchGraph":  x.LaunchGraph(1, 1),
		"UpdateGraph":  x.UpdateGraph(1, 1),
	} {
		if !errors.Is(err, ErrMissingSymbol) {
			t.Errorf("%s without the symbol: %v", name, err)
		}
	}
	if ErrStreamCaptureUnsupported.Name() != "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED" {
		t.Errorf("name of 900 = %q", ErrStreamCaptureUnsupported.Name())
	}
}
