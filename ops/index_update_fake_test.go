//go:build linux && (amd64 || arm64) && !nocuda && !race

package ops

import (
	"errors"
	"testing"

	"github.com/torchlean-go/torchlean/driver"
)

// TestFakeIndicesUpdateCapture: a graph captured over a gather and a deterministic scatter-add
// through prepared Indices (its sorted form built by an eager call before the capture) replays
// with the indices refilled by Update between replays: the device memory the graph reads stays
// the indices', the replays launch the recorded kernels on live memory, and an Update inside
// the capture is refused (ErrCapturing) without changing the indices.
func TestFakeIndicesUpdateCapture(t *testing.T) {
	defer SetDeterministic(Deterministic())
	SetDeterministic(true)
	d, f := newFakeDevice(t, driver.FakeOptions{})
	mat, err := Full(d, 5*4, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer mat.Release()
	ix, err := NewIndices(d, []int{4, 0, 4, 2, 1, 9})
	if err != nil {
		t.Fatal(err)
	}
	step := func() error {
		g, err := GatherRowsIdx(mat, 5, 4, ix)
		if err != nil {
			return err
		}
		defer g.Release()
		s, err := ScatterAddRowsIdx(mat, g, 5, 4, ix)
		if err != nil {
			return err
		}
		s.Release()
		return nil
	}
	if err := step(); err != nil { // eager: the sorted form for 5 rows
		t.Fatal(err)
	}
	mem, order := ix.buf.mem.ptr, ix.sorted[5][0].buf.mem.ptr
	host := append([]uint32(nil), ix.host...)
	if _, err := d.Capture(func() error {
		if err := step(); err != nil {
			return err
		}
		return ix.Update([]int{0, 0, 0, 0, 0, 0})
	}); !errors.Is(err, ErrCapturing) {
		t.Fatalf("Update inside a capture: %v, want ErrCapturing", err)
	}
	for j, v := range ix.host {
		if v != host[j] {
			t.Fatalf("the refused Update changed the indices: %v, was %v", ix.host, host)
		}
	}
	graph, err := d.Capture(step)
	if err != nil {
		t.Fatal(err)
	}
	gather, sorted := f.Launched()[gatherRowsOp.kernel.Name], f.Launched()[scatterSortedOp.kernel.Name]
	for k, next := range [][]int{{1, 1, 3, 3, 0, 7}, {0, 1, 2, 3, 4, 4}} {
		if err := ix.Update(next); err != nil {
			t.Fatal(err)
		}
		if err := graph.Launch(); err != nil {
			t.Fatal(err)
		}
		if ix.buf.mem.ptr != mem || ix.sorted[5][0].buf.mem.ptr != order {
			t.Fatalf("update %d moved the indices", k)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if g, s := f.Launched()[gatherRowsOp.kernel.Name]-gather, f.Launched()[scatterSortedOp.kernel.Name]-sorted; g != 2 || s != 2 {
		t.Errorf("2 replays launched gather_rows %d and scatter_add_rows_sorted %d times, want 2 each", g, s)
	}
	if err := graph.Close(); err != nil {
		t.Fatal(err)
	}
	ix.Release()
	checkFake(t, f)
}
