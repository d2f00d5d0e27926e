package nn

import (
	"errors"
	"fmt"
	"iter"
	"math/big"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/ops"
)

// dataDevice is where the loader tests put batches: the default device (the CPU here, a GPU on a
// GPU machine).
func dataDevice() *ops.Device { return ops.Default() }

// settledLive is the device's live bytes once the garbage collector's finalizers of earlier
// tests' buffers have run.
func settledLive(d *ops.Device) int64 {
	live := d.Stats().LiveBytes
	for range 100 {
		runtime.GC()
		time.Sleep(time.Millisecond)
		now := d.Stats().LiveBytes
		if now == live {
			break
		}
		live = now
	}
	return live
}

// testSource is a TensorSource of n examples: features [2, 3] with values 100*i + j, labels
// i % 7, tokens [2] with values i and i+1000.
func testSource(t testing.TB, n int) *TensorSource {
	feats := make([]float32, 6*n)
	labels := make([]int, n)
	tokens := make([]int, 2*n)
	for i := range n {
		for j := range 6 {
			feats[6*i+j] = float32(100*i + j)
		}
		labels[i] = i % 7
		tokens[2*i], tokens[2*i+1] = i, i+1000
	}
	src, err := NewTensorSource(Layout{Features: []int{2, 3}, Tokens: []int{2}, Labels: []int{}}, feats, tokens, labels)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// refShuffle is Order's documented permutation computed independently: each w_k from its closed
// form and j by exact integer arithmetic.
func refShuffle(n int, key uint64) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	mix := func(z uint64) uint64 {
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	for i := n - 1; i >= 1; i-- {
		k := uint64(n - i)
		w := mix(key + k*0x9e3779b97f4a7c15)
		j := new(big.Int).Mul(new(big.Int).SetUint64(w), big.NewInt(int64(i+1)))
		j.Rsh(j, 64)
		p[i], p[j.Int64()] = p[j.Int64()], p[i]
	}
	return p
}

func TestLoaderOrder(t *testing.T) {
	src := testSource(t, 1000)
	l, err := NewLoader(src, LoaderOptions{BatchSize: 10, Shuffle: true, Seed: 1, Device: ops.CPU()})
	if err != nil {
		t.Fatal(err)
	}
	// Fixed values: the order must never change across versions, platforms or devices.
	if got, want := l.Order(0)[:10], []int{680, 835, 311, 409, 587, 89, 396, 346, 7, 337}; !slices.Equal(got, want) {
		t.Errorf("Order(0) of seed 1 starts %v, want %v", got, want)
	}
	for _, c := range []struct {
		seed  uint64
		epoch int
	}{{1, 0}, {1, 1}, {2, 0}, {0, 7}} {
		l.o.Seed = c.seed
		got := l.Order(c.epoch)
		if want := refShuffle(1000, ops.KeyOf(c.seed, uint64(c.epoch))); !slices.Equal(got, want) {
			t.Errorf("seed %d epoch %d: Order differs from the documented algorithm", c.seed, c.epoch)
		}
		if !slices.Equal(got, l.Order(c.epoch)) {
			t.Errorf("seed %d epoch %d: two calls differ", c.seed, c.epoch)
		}
		if s := slices.Sorted(slices.Values(got)); s[0] != 0 || s[999] != 999 || len(slices.Compact(s)) != 1000 {
			t.Errorf("seed %d epoch %d: not a permutation", c.seed, c.epoch)
		}
	}
	l.o.Seed = 1
	if slices.Equal(l.Order(0), l.Order(1)) {
		t.Error("epochs 0 and 1 have the same order")
	}
	l.o.Shuffle = false
	for i, v := range l.Order(3) {
		if v != i {
			t.Fatalf("unshuffled Order(3)[%d] = %d", i, v)
		}
	}

	// Each of the 6 orders of 3 examples comes about 1/6 of the time (a loose chi-square bound).
	counts := map[[3]int]int{}
	const epochs = 6000
	for e := range epochs {
		var p [3]int
		copy(p[:], refShuffle(3, ops.KeyOf(5, uint64(e))))
		counts[p]++
	}
	chi := 0.0
	for _, c := range counts {
		d := float64(c) - epochs/6.0
		chi += d * d / (epochs / 6.0)
	}
	if len(counts) != 6 || chi > 30 {
		t.Errorf("orders of 3 examples over %d epochs: %v (chi-square %.1f)", epochs, counts, chi)
	}
}

// TestLoaderBatches: every batch holds the examples of Order in order, with their features on
// the device, their tokens and labels on the host (and on the device with Indices), for each
// prefetch depth, with and without DropLast.
func TestLoaderBatches(t *testing.T) {
	d := dataDevice()
	src := testSource(t, 10)
	for _, prefetch := range []int{0, 1, 2} {
		for _, dropLast := range []bool{false, true} {
			l, err := NewLoader(src, LoaderOptions{BatchSize: 4, Shuffle: true, Seed: 3, DropLast: dropLast,
				Device: d, Prefetch: prefetch, Indices: true})
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("prefetch %d drop %v", prefetch, dropLast)
			wantLen := map[bool]int{false: 3, true: 2}[dropLast]
			if l.Len() != wantLen {
				t.Errorf("%s: Len %d, want %d", name, l.Len(), wantLen)
			}
			for epoch := range 2 {
				var seen []int
				var prev *Batch
				for b := range l.Epoch(epoch) {
					if prev != nil && !errors.Is(prev.X.Err(), ops.ErrReleased) {
						t.Errorf("%s: batch %d's features still live during batch %d", name, prev.Index, b.Index)
					}
					prev = b
					if b.Epoch != epoch || b.Index != len(seen)/4 {
						t.Errorf("%s: batch (epoch %d, index %d), want (%d, %d)", name, b.Epoch, b.Index, epoch, len(seen)/4)
					}
					checkBatch(t, name, b, d)
					seen = append(seen, b.Examples...)
				}
				if err := l.Err(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !errors.Is(prev.X.Err(), ops.ErrReleased) {
					t.Errorf("%s: last batch's features live after the epoch", name)
				}
				want := l.Order(epoch)
				if dropLast {
					want = want[:4*wantLen]
				}
				if !slices.Equal(seen, want) {
					t.Errorf("%s epoch %d: examples %v, want %v", name, epoch, seen, want)
				}
			}
		}
	}
}

// checkBatch compares a batch's contents with testSource's examples.
func checkBatch(t *testing.T, name string, b *Batch, d *ops.Device) {
	t.Helper()
	n := b.Size()
	if !slices.Equal(b.XShape, []int{n, 2, 3}) || !slices.Equal(b.TokensShape, []int{n, 2}) || !slices.Equal(b.LabelsShape, []int{n}) {
		t.Errorf("%s: shapes %v %v %v", name, b.XShape, b.TokensShape, b.LabelsShape)
	}
	if b.X.Device() != d || b.X.Len() != 6*n || b.TokenIdx.Len() != 2*n || b.LabelIdx.Len() != n {
		t.Errorf("%s: device buffers of %d, %d, %d elements on %s", name, b.X.Len(), b.TokenIdx.Len(), b.LabelIdx.Len(), b.X.Device())
	}
	x, err := b.X.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for r, i := range b.Examples {
		for j := range 6 {
			if x[6*r+j] != float32(100*i+j) {
				t.Fatalf("%s: X[%d][%d] = %v, want %v", name, r, j, x[6*r+j], 100*i+j)
			}
		}
		if b.Labels[r] != i%7 || b.Tokens[2*r] != i || b.Tokens[2*r+1] != i+1000 {
			t.Fatalf("%s: row %d (example %d): label %d tokens %v", name, r, i, b.Labels[r], b.Tokens[2*r:2*r+2])
		}
	}
}

// TestLoaderEpochFrom: EpochFrom(e, k) gives Epoch(e)'s batches from k on.
func TestLoaderEpochFrom(t *testing.T) {
	l, err := NewLoader(testSource(t, 23), LoaderOptions{BatchSize: 5, Shuffle: true, Seed: 9, Device: dataDevice(), Prefetch: 1})
	if err != nil {
		t.Fatal(err)
	}
	var all [][]int
	for b := range l.Epoch(4) {
		all = append(all, b.Examples)
	}
	for start := 0; start <= l.Len(); start++ {
		var got [][]int
		for b := range l.EpochFrom(4, start) {
			if b.Index != start+len(got) {
				t.Errorf("EpochFrom(4, %d): batch index %d, want %d", start, b.Index, start+len(got))
			}
			got = append(got, b.Examples)
		}
		if l.Err() != nil || !slices.EqualFunc(got, all[start:], slices.Equal) {
			t.Errorf("EpochFrom(4, %d): %v (err %v), want %v", start, got, l.Err(), all[start:])
		}
	}
}

// TestLoaderReleases: the device's live bytes stay within the batches prefetched plus the one in
// use, and return to the baseline after an epoch that ends, breaks, panics, fails or is closed
// while pulled; the prefetching goroutine exits; a kept batch survives until its Release.
func TestLoaderReleases(t *testing.T) {
	d := dataDevice()
	src := testSource(t, 64)
	batchBytes := int64(4 * (6 + 2 + 1) * 8) // features, token and label indices of 8 examples
	goroutines := runtime.NumGoroutine()
	base := settledLive(d)
	check := func(what string) {
		t.Helper()
		if live := settledLive(d); live != base {
			t.Errorf("%s: live bytes %d, baseline %d", what, live, base)
		}
		for i := 0; runtime.NumGoroutine() > goroutines; i++ {
			if i == 1000 {
				t.Fatalf("%s: %d goroutines, %d before", what, runtime.NumGoroutine(), goroutines)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for _, prefetch := range []int{0, 1, 2} {
		l, err := NewLoader(src, LoaderOptions{BatchSize: 8, Shuffle: true, Device: d, Prefetch: prefetch, Indices: true})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("prefetch %d", prefetch)
		most := int64(0)
		for range l.Epoch(0) {
			time.Sleep(2 * time.Millisecond) // the step: the goroutine fills its queue meanwhile
			most = max(most, d.Stats().LiveBytes-base)
		}
		t.Logf("%s: up to %d live bytes (batch %d)", name, most, batchBytes)
		if limit := int64(prefetch+1) * batchBytes; most > limit || most < batchBytes {
			t.Errorf("%s: up to %d live bytes during the epoch, want %d to %d", name, most, batchBytes, limit)
		}
		check(name + ", whole epoch")

		for b := range l.Epoch(1) {
			if b.Index == 2 {
				break
			}
		}
		check(name + ", break")

		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			for range l.Epoch(1) {
				panic("step failed")
			}
		}()
		check(name + ", panic")

		var kept *Batch
		for b := range l.Epoch(2) {
			if b.Index == 1 {
				b.Keep()
				kept = b
			}
		}
		if kept.X.Err() != nil || kept.LabelIdx.Len() != 8 {
			t.Errorf("%s: kept batch released (%v)", name, kept.X.Err())
		}
		kept.Release()
		kept.Release()
		check(name + ", kept batch released")

		next, stop := iter.Pull(l.Epoch(3))
		if b, ok := next(); !ok || b.X.Err() != nil {
			t.Fatalf("%s: pulled batch %v %v", name, b, ok)
		}
		l.Close()
		if _, ok := next(); ok {
			t.Errorf("%s: a batch after Close", name)
		}
		stop()
		check(name + ", closed while pulled")
		for range l.Epoch(0) {
			t.Errorf("%s: a batch after Close", name)
		}
		if err := l.Err(); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("%s: epoch after Close: error %v", name, err)
		}
	}
}

// failingSource fails to read example bad.
type failingSource struct {
	*TensorSource
	bad int
}

func (f failingSource) Read(i int, ex Example) error {
	if i == f.bad {
		return errors.New("disk on fire")
	}
	return f.TensorSource.Read(i, ex)
}

func TestLoaderErrors(t *testing.T) {
	d := dataDevice()
	src := testSource(t, 20)
	base := settledLive(d)
	for _, prefetch := range []int{0, 1, 2} {
		l, err := NewLoader(failingSource{src, 13}, LoaderOptions{BatchSize: 3, Device: d, Prefetch: prefetch})
		if err != nil {
			t.Fatal(err)
		}
		batches := 0
		for range l.Epoch(0) {
			batches++
		}
		err = l.Err()
		if batches != 4 || err == nil || !strings.HasPrefix(err.Error(), "nn: loader: epoch 0 batch 4: example 13: disk on fire") {
			t.Errorf("prefetch %d: %d batches, error %v", prefetch, batches, err)
		}
		if live := settledLive(d); live != base {
			t.Errorf("prefetch %d: live bytes %d after the failed epoch, baseline %d", prefetch, live, base)
		}
		for range l.Epoch(0) {
			for range l.Epoch(1) {
				t.Error("a nested epoch ran")
			}
			if err := l.Err(); err == nil || !strings.Contains(err.Error(), "already in progress") {
				t.Errorf("nested epoch: error %v", err)
			}
			break
		}
	}

	// Negative labels cannot go to the device as indices.
	neg, err := NewTensorSource(Layout{Labels: []int{}}, nil, nil, []int{1, -2, 3})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLoader(neg, LoaderOptions{BatchSize: 2, Device: d, Indices: true})
	if err != nil {
		t.Fatal(err)
	}
	for range l.Epoch(0) {
		t.Error("a batch with a negative index")
	}
	if err := l.Err(); err == nil || !strings.Contains(err.Error(), "labels") || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative label: error %v", err)
	}
	l, _ = NewLoader(src, LoaderOptions{BatchSize: 2, Device: d})
	for _, c := range []struct{ epoch, start int }{{-1, 0}, {0, -1}, {0, 11}} {
		for range l.EpochFrom(c.epoch, c.start) {
			t.Errorf("EpochFrom(%d, %d) gave a batch", c.epoch, c.start)
		}
		if err := l.Err(); err == nil || !strings.HasPrefix(err.Error(), "nn: loader: ") {
			t.Errorf("EpochFrom(%d, %d): error %v", c.epoch, c.start, err)
		}
	}
	for range l.EpochFrom(0, 10) {
		t.Error("EpochFrom(0, Len()) gave a batch")
	}
	if l.Err() != nil {
		t.Errorf("EpochFrom(0, Len()): %v", l.Err())
	}

	for name, o := range map[string]LoaderOptions{
		"batch 0":       {BatchSize: 0},
		"prefetch -1":   {BatchSize: 1, Prefetch: -1},
		"prefetch 17":   {BatchSize: 1, Prefetch: 17},
		"batch too big": {BatchSize: 1 << 30},
	} {
		if _, err := NewLoader(src, o); err == nil || !strings.HasPrefix(err.Error(), "nn: loader: ") {
			t.Errorf("NewLoader with %s: error %v", name, err)
		}
	}
	if _, err := NewLoader(nil, LoaderOptions{BatchSize: 1}); err == nil {
		t.Error("NewLoader(nil): no error")
	}

	for name, f := range map[string]func() (*TensorSource, error){
		"no parts":       func() (*TensorSource, error) { return NewTensorSource(Layout{}, nil, nil, nil) },
		"zero dimension": func() (*TensorSource, error) { return NewTensorSource(Layout{Features: []int{2, 0}}, nil, nil, nil) },
		"ragged features": func() (*TensorSource, error) {
			return NewTensorSource(Layout{Features: []int{3}}, make([]float32, 7), nil, nil)
		},
		"absent part": func() (*TensorSource, error) {
			return NewTensorSource(Layout{Features: []int{3}}, make([]float32, 6), nil, []int{1, 2})
		},
		"row counts": func() (*TensorSource, error) {
			return NewTensorSource(Layout{Features: []int{3}, Labels: []int{}}, make([]float32, 6), nil, []int{1, 2, 3})
		},
		"huge shape": func() (*TensorSource, error) {
			return NewTensorSource(Layout{Features: []int{1 << 20, 1 << 20, 1 << 20}}, nil, nil, nil)
		},
	} {
		if s, err := f(); err == nil || s != nil || !strings.HasPrefix(err.Error(), "nn: ") {
			t.Errorf("NewTensorSource, %s: %v, error %v", name, s, err)
		}
	}
	for _, c := range []struct{ n, length, stride int }{{10, 0, 1}, {10, 3, 0}, {3, 3, 1}, {0, 1, 1}} {
		if _, err := NewTokenWindows(make([]int, c.n), c.length, c.stride); err == nil {
			t.Errorf("NewTokenWindows(%d tokens, %d, %d): no error", c.n, c.length, c.stride)
		}
	}
	if err := src.Read(20, Example{}); err == nil {
		t.Error("TensorSource.Read out of range: no error")
	}
}

func TestTensorSourceLayout(t *testing.T) {
	src, err := NewTensorSource(Layout{Features: []int{2}, Labels: []int{}}, []float32{1, 2, 3, 4}, nil, []int{5, 6})
	if err != nil {
		t.Fatal(err)
	}
	lay := src.Layout()
	if src.Len() != 2 || lay.Labels == nil || len(lay.Labels) != 0 || lay.Tokens != nil {
		t.Errorf("Len %d, layout %#v", src.Len(), lay)
	}
	empty, err := NewTensorSource(Layout{Features: []int{2}}, []float32{}, nil, nil)
	if err != nil || empty.Len() != 0 {
		t.Fatalf("empty source: %v, %v", empty, err)
	}
	l, err := NewLoader(empty, LoaderOptions{BatchSize: 4, Device: ops.CPU(), Prefetch: 1})
	if err != nil || l.Len() != 0 {
		t.Fatalf("loader of an empty source: %v", err)
	}
	for range l.Epoch(0) {
		t.Error("a batch of an empty source")
	}
}

func TestTokenWindows(t *testing.T) {
	stream := make([]int, 20)
	for i := range stream {
		stream[i] = 3 * i
	}
	w, err := NewTokenWindows(stream, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if w.Len() != 6 { // windows at 0, 3, ..., 15 (the last one ends at 19, its targets at 19)
		t.Fatalf("Len %d, want 6", w.Len())
	}
	l, err := NewLoader(w, LoaderOptions{BatchSize: 4, Shuffle: true, Seed: 2, Device: dataDevice(), Prefetch: 1, Indices: true})
	if err != nil {
		t.Fatal(err)
	}
	for b := range l.Epoch(0) {
		if b.X != nil || !slices.Equal(b.TokensShape, []int{b.Size(), 4}) || !slices.Equal(b.LabelsShape, []int{b.Size(), 4}) || b.TokenIdx.Len() != 4*b.Size() {
			t.Errorf("batch %d: X %v, shapes %v %v", b.Index, b.X, b.TokensShape, b.LabelsShape)
		}
		for r, i := range b.Examples {
			for j := range 4 {
				if b.Tokens[4*r+j] != 3*(3*i+j) || b.Labels[4*r+j] != 3*(3*i+j+1) {
					t.Fatalf("batch %d row %d (window %d): tokens %v labels %v", b.Index, r, i, b.Tokens[4*r:4*r+4], b.Labels[4*r:4*r+4])
				}
			}
		}
	}
	if l.Err() != nil {
		t.Fatal(l.Err())
	}
}

// BenchmarkLoader measures a batch of 128 Fashion-MNIST-sized examples (784 features and a
// label) through the loader, without and with prefetching, against a simulated training step:
// "wait" holds the loop for 300 us as a GPU step does (the host waits while the device works;
// a deadline loop that yields, since time.Sleep oversleeps by up to a millisecond on a busy
// machine): prefetching should hide the batch's assembly and upload entirely, "matmul" runs a 128x784 by 784x256
// product on the loader's device (ops.Default(): the GPU on a GPU machine). ns/op is per batch;
// compare the prefetch=0 and prefetch>0 rows of one step.
func BenchmarkLoader(b *testing.B) {
	const n, batch, dim, hidden = 4096, 128, 784, 256
	feats := make([]float32, n*dim)
	for i := range feats {
		feats[i] = float32(i%251) / 251
	}
	labels := make([]int, n)
	src, err := NewTensorSource(Layout{Features: []int{dim}, Labels: []int{}}, feats, nil, labels)
	if err != nil {
		b.Fatal(err)
	}
	d := dataDevice()
	w, err := ops.Full(d, dim*hidden, 0.01)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Release()
	steps := map[string]func(x *ops.Buffer) error{
		"wait": func(*ops.Buffer) error {
			for end := time.Now().Add(300 * time.Microsecond); time.Now().Before(end); {
				runtime.Gosched()
			}
			return nil
		},
		"matmul": func(x *ops.Buffer) error {
			y, err := ops.Matmul(x, w, batch, dim, hidden)
			y.Release()
			return err
		},
		"none": func(*ops.Buffer) error { return nil },
	}
	for _, step := range []string{"none", "wait", "matmul"} {
		for _, prefetch := range []int{0, 1, 2} {
			b.Run(fmt.Sprintf("step=%s/prefetch=%d", step, prefetch), func(b *testing.B) {
				l, err := NewLoader(src, LoaderOptions{BatchSize: batch, Shuffle: true, Device: d, Prefetch: prefetch, DropLast: true})
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(4 * batch * dim)
				done := 0
				for epoch := 0; done < b.N; epoch++ {
					for x := range l.Epoch(epoch) {
						if err := steps[step](x.X); err != nil {
							b.Fatal(err)
						}
						if done++; done == b.N {
							break
						}
					}
					if err := l.Err(); err != nil {
						b.Fatal(err)
					}
				}
				if err := d.Sync(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
