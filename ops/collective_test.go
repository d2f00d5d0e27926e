package ops

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// runRanks runs f on size in-process ranks of a LocalGroup and returns their errors.
func runRanks(t *testing.T, size int, timeout time.Duration, f func(c *Comm) error) []error {
	t.Helper()
	g, err := NewLocalGroup(size, timeout)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		c, err := NewHostComm(CPU(), r, size, g.Rank(r), CommOptions{Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[r] = f(c); errs[r] != nil {
				c.Abort(errs[r])
			}
		}()
	}
	wg.Wait()
	return errs
}

// rankData is rank r's test vector: values whose sums round differently in different orders.
func rankData(r, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.Sin(float64(7*r+i+1))) * float32(math.Pow(10, float64((i+r)%9-4)))
	}
	return v
}

// TestAllReduceExact: the host all-reduce is the rank-ordered float32 sum (divided by R for the
// average), element by element, on every rank, over several buffers taken as one vector.
func TestAllReduceExact(t *testing.T) {
	for _, size := range []int{1, 2, 3, 5} {
		for _, op := range []ReduceOp{ReduceSum, ReduceAvg} {
			const n = 257
			want := make([]float32, n)
			for i := range want {
				var s float32
				for r := range size {
					s += rankData(r, n)[i]
				}
				if op == ReduceAvg {
					s /= float32(size)
				}
				want[i] = s
			}
			got := make([][]float32, size)
			errs := runRanks(t, size, time.Minute, func(c *Comm) error {
				v := rankData(c.Rank(), n)
				a, _ := FromFloat32(CPU(), v[:100])
				b, _ := FromFloat32(CPU(), v[100:])
				defer a.Release()
				defer b.Release()
				if err := c.AllReduce(op, a, b); err != nil {
					return err
				}
				x, _ := a.Float32s()
				y, _ := b.Float32s()
				got[c.Rank()] = append(x, y...)
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("size %d rank %d: %v", size, r, err)
				}
				for i := range want {
					if math.Float32bits(got[r][i]) != math.Float32bits(want[i]) {
						t.Fatalf("size %d %v rank %d element %d: %g, want %g", size, op, r, i, got[r][i], want[i])
					}
				}
			}
		}
	}
}

func TestCollectivesHost(t *testing.T) {
	const size, n = 3, 6
	errs := runRanks(t, size, time.Minute, func(c *Comm) error {
		r := c.Rank()
		x, _ := FromFloat32(CPU(), []float32{float32(r), 1, 2, 3, 4, float32(10 * r)})
		defer x.Release()
		// AllGather: rank-ordered concatenation.
		g, err := c.AllGather(x)
		if err != nil {
			return err
		}
		v, _ := g.Float32s()
		g.Release()
		if len(v) != size*n || v[n] != 1 || v[2*n+5] != 20 {
			return fmt.Errorf("all_gather %v", v)
		}
		// ReduceScatter: rank r gets elements [2r, 2r+2) of the sum.
		s, err := c.ReduceScatter(x, ReduceSum)
		if err != nil {
			return err
		}
		v, _ = s.Float32s()
		s.Release()
		want := [][]float32{{3, 3}, {6, 9}, {12, 30}}[r]
		if len(v) != 2 || v[0] != want[0] || v[1] != want[1] {
			return fmt.Errorf("reduce_scatter %v, want %v", v, want)
		}
		// Broadcast from rank 2.
		if err := c.Broadcast(2, x); err != nil {
			return err
		}
		v, _ = x.Float32s()
		if v[0] != 2 || v[5] != 20 {
			return fmt.Errorf("broadcast %v", v)
		}
		if _, err := c.ReduceScatter(x, ReduceAvg); err != nil {
			return err
		}
		odd, _ := FromFloat32(CPU(), []float32{1, 2, 3, 4})
		defer odd.Release()
		if _, err := c.ReduceScatter(odd, ReduceSum); err == nil || !strings.Contains(err.Error(), "equal parts") {
			return fmt.Errorf("reduce_scatter of 4 over 3 ranks: %v", err)
		}
		return c.Broadcast(3, x) // bad root: a local error, no exchange
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "root 3 of 3") {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestCollectiveFaults: a length mismatch, a rank that fails, and a rank that never comes all
// end every rank with an error wrapping ErrAborted, within the timeout.
func TestCollectiveFaults(t *testing.T) {
	errs := runRanks(t, 3, time.Minute, func(c *Comm) error {
		x, _ := Zeros(CPU(), 4+c.Rank()/2)
		defer x.Release()
		return c.AllReduce(ReduceSum, x)
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "elements") {
			t.Errorf("length mismatch, rank %d: %v", r, err)
		}
	}
	errs = runRanks(t, 3, time.Minute, func(c *Comm) error {
		if c.Rank() == 1 {
			return errors.New("rank 1 crashed")
		}
		x, _ := Zeros(CPU(), 4)
		defer x.Release()
		return c.AllReduce(ReduceSum, x)
	})
	for r, err := range errs {
		if err == nil || (r != 1 && (!errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), "rank 1 crashed"))) {
			t.Errorf("crash, rank %d: %v", r, err)
		}
	}
	start := time.Now()
	const timeout = 200 * time.Millisecond
	errs = runRanks(t, 2, timeout, func(c *Comm) error {
		if c.Rank() == 0 {
			time.Sleep(3 * timeout) // hangs, then tries
		}
		x, _ := Zeros(CPU(), 4)
		defer x.Release()
		return c.AllReduce(ReduceSum, x)
	})
	if !errors.Is(errs[1], ErrAborted) || !strings.Contains(errs[1].Error(), "rank(s) [0] did not arrive") {
		t.Errorf("hang, rank 1: %v", errs[1])
	}
	if !errors.Is(errs[0], ErrAborted) {
		t.Errorf("hang, rank 0 (after the abort): %v", errs[0])
	}
	if d := time.Since(start); d > 3*timeout+2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestCommErrors(t *testing.T) {
	g, _ := NewLocalGroup(2, 0)
	if _, err := NewHostComm(CPU(), 2, 2, g.Rank(0), CommOptions{}); err == nil {
		t.Error("rank 2 of 2 accepted")
	}
	if _, err := NewHostComm(CPU(), 0, 2, nil, CommOptions{}); err == nil {
		t.Error("nil exchanger accepted")
	}
	if _, err := NewLocalGroup(0, 0); err == nil {
		t.Error("empty group accepted")
	}
	if _, err := NewNCCLComm(CPU(), CommID{}, 0, 1, CommOptions{}); err == nil || !strings.Contains(err.Error(), "not a CUDA device") {
		t.Errorf("NCCL on the CPU: %v", err)
	}
	c, _ := NewHostComm(CPU(), 0, 1, g.Rank(0), CommOptions{})
	if c.Timeout() != DefaultCollectiveTimeout || !c.Exact() || c.Size() != 1 {
		t.Errorf("defaults: %v %v %d", c.Timeout(), c.Exact(), c.Size())
	}
	x, _ := Zeros(CPU(), 2)
	x.Release()
	if err := c.AllReduce(ReduceSum, x); !errors.Is(err, ErrReleased) {
		t.Errorf("released operand: %v", err)
	}
	if err := c.AllReduce(ReduceOp(9)); err == nil {
		t.Error("unknown reduction accepted")
	}
}
