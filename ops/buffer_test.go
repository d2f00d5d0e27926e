package ops

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/internal/testenv"
)

// devices returns the devices to test on: the CPU always, CUDA device 0 when usable.
func devices(t *testing.T) []*Device {
	ds := []*Device{CPU()}
	if d, err := Open("cuda"); err == nil {
		ds = append(ds, d)
	}
	return ds
}

func mustBuf(t *testing.T, d *Device, v []float32) *Buffer {
	t.Helper()
	b, err := FromFloat32(d, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func download(t *testing.T, b *Buffer, err error) []float32 {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	f, err := b.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	return f
}

func TestBufferLifecycle(t *testing.T) {
	for _, d := range devices(t) {
		t.Run(d.Kind().String(), func(t *testing.T) {
			base := d.Stats()
			a, err := FromFloat64(d, []float64{1.5, -2, 1e-50, 0.1})
			if err != nil {
				t.Fatal(err)
			}
			b, err := FromFloat64(d, []float64{1.5, -2, 1e-50, 0.1})
			if err != nil {
				t.Fatal(err)
			}
			if a == b || a.Len() != 4 {
				t.Fatalf("uploads must be distinct buffers of length 4")
			}
			got, err := a.Float64s()
			if err != nil {
				t.Fatal(err)
			}
			want := []float64{1.5, -2, 0, float64(float32(0.1))}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("element %d: %v, want %v", i, got[i], want[i])
				}
			}
			s := d.Stats()
			if s.LiveBytes-base.LiveBytes != 32 || s.AllocCount-base.AllocCount != 2 {
				t.Errorf("telemetry after two uploads: %+v (base %+v)", s, base)
			}
			if !a.Release() || a.Release() {
				t.Error("Release must report true once, then false")
			}
			if a.Len() != 0 {
				t.Error("a released buffer has length 0")
			}
			if _, err := a.Float32s(); !errors.Is(err, ErrReleased) {
				t.Errorf("download after release: %v", err)
			}
			if _, err := Add(a, b); !errors.Is(err, ErrReleased) {
				t.Errorf("kernel on a released buffer: %v", err)
			}
			b.Release()
			s = d.Stats()
			if s.LiveBytes != base.LiveBytes || s.FreeCount-base.FreeCount != 2 || s.PeakBytes < base.LiveBytes+32 {
				t.Errorf("telemetry after release: %+v (base %+v)", s, base)
			}
			if !strings.Contains(s.String(), "live=") {
				t.Errorf("report %q", s.String())
			}
			if err := d.Collect(true); err != nil {
				t.Error(err)
			}
			if d.Stats().CachedBytes != 0 {
				t.Error("Collect(true) left cached bytes")
			}
		})
	}
}

func TestFillCopyEmpty(t *testing.T) {
	for _, d := range devices(t) {
		z, err := Zeros(d, 5)
		if got := download(t, z, err); got[4] != 0 || math.Signbit(float64(got[4])) {
			t.Errorf("zeros: %v", got)
		}
		f, err := Full(d, 3, 0.1)
		if got := download(t, f, err); got[2] != float32(0.1) {
			t.Errorf("full: %v", got)
		}
		src := mustBuf(t, d, []float32{1, 2, 3})
		c, err := Copy(src)
		if got := download(t, c, err); got[2] != 3 {
			t.Errorf("copy: %v", got)
		}
		src.Release()
		e, err := Zeros(d, 0)
		if err != nil || e.Len() != 0 || e.Release() {
			t.Errorf("empty buffer: %v %v", e, err)
		}
		e2 := mustBuf(t, d, nil)
		r, err := Exp(e2)
		if err != nil || r.Len() != 0 {
			t.Errorf("kernel on an empty buffer: %v", err)
		}
		if _, err := Zeros(d, -1); err == nil {
			t.Error("negative length accepted")
		}
		// Lengths whose byte counts overflow (4n = 0 or 4 mod 2^64) are refused too, not
		// allocated small.
		for _, n := range []int{testenv.Wide(1 << 50), testenv.Wide(1 << 62), testenv.Wide(1<<62 + 1), math.MaxInt} {
			if _, err := Zeros(d, n); !errors.Is(err, ErrOutOfMemory) {
				t.Errorf("Zeros(%d): %v, want ErrOutOfMemory", n, err)
			}
		}
		// An op's failed allocation names the op, once.
		empty := mustBuf(t, d, nil)
		huge := testenv.Wide(1 << 50)
		for _, c := range []struct {
			op  string
			run func() error
		}{
			{"rand_uniform", func() error { _, err := RandUniform(d, huge, 1); return err }},
			{"zeros", func() error { _, err := Zeros(d, huge); return err }},
			{"full", func() error { _, err := Full(d, huge, 1); return err }},
			{"matmul", func() error { _, err := Matmul(empty, empty, huge>>25, 0, 1<<25); return err }},
			{"bmm", func() error { _, err := Bmm(empty, empty, 1, huge>>25, 0, 1<<25); return err }},
		} {
			err := c.run()
			if !errors.Is(err, ErrOutOfMemory) || !strings.HasPrefix(err.Error(), "ops: "+c.op+": out of memory: ") ||
				strings.Count(err.Error(), "ops: ") != 1 {
				t.Errorf("%s of 2^50 elements: %v, want ErrOutOfMemory as \"ops: %s: out of memory: ...\"", c.op, err, c.op)
			}
		}
		if _, err := Zeros(d, -1); err == nil || err.Error() != "ops: zeros: negative length -1" {
			t.Errorf("Zeros(-1): %v", err)
		}
	}
}

func TestSizeMismatchAndDevices(t *testing.T) {
	a := mustBuf(t, CPU(), []float32{1, 2})
	b := mustBuf(t, CPU(), []float32{1, 2, 3})
	if _, err := Add(a, b); err == nil || !strings.Contains(err.Error(), "size mismatch") {
		t.Errorf("size mismatch: %v", err)
	}
	if _, err := Add(a, nil); err == nil {
		t.Error("nil operand accepted")
	}
	if _, _, err := MaxBwd(a, a, b); err == nil {
		t.Error("size mismatch in a backward kernel accepted")
	}
	if _, err := Open("tpu"); err == nil {
		t.Error("unknown device name accepted")
	}
}

func TestDeterministicFlag(t *testing.T) {
	old := Deterministic()
	defer SetDeterministic(old)
	if !SetDeterministicChecked(true) || !Deterministic() {
		t.Error("flag not set")
	}
	SetDeterministic(false)
	if Deterministic() || SetDeterministicChecked(false) {
		t.Error("flag not cleared")
	}
}

func TestReleaseThen(t *testing.T) {
	a := mustBuf(t, CPU(), []float32{1})
	w := mustBuf(t, CPU(), []float32{2})
	if ReleaseThen(a, w, a) != a || w.Len() != 0 || a.Len() != 1 {
		t.Error("ReleaseThen must release the workspace and keep keep")
	}
}

// TestUnreachableBufferFreed checks the garbage collector's safety net: a buffer dropped without
// Release is released once it is unreachable, on every device.
func TestUnreachableBufferFreed(t *testing.T) {
	for _, d := range devices(t) {
		before := d.Stats()
		func() {
			b, err := Zeros(d, 1000)
			if err != nil {
				t.Fatal(err)
			}
			_ = b
		}()
		// Earlier tests' garbage may be released meanwhile too: wait until live bytes are back
		// to where they were (or lower) and at least one more buffer was freed.
		deadline := time.Now().Add(10 * time.Second)
		for s := d.Stats(); s.FreeCount == before.FreeCount || s.LiveBytes > before.LiveBytes; s = d.Stats() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: an unreachable buffer was not released: before %s, now %s", d.Kind(), before, s)
			}
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	}
}

// TestReleaseWhileInUse releases buffers while other goroutines run ops on them: every op either
// fails with ErrReleased or returns the right values (its inputs stay valid until it is done),
// and every byte comes back.
func TestReleaseWhileInUse(t *testing.T) {
	const n, trials = 4096, 200
	host := make([]float32, n)
	idx := make([]int, n)
	scattered := make([]float32, n)
	for i := range host {
		host[i] = float32(i%7) - 3
		idx[i] = (i * 31) % n
	}
	for j, i := range idx {
		scattered[i] = host[j] // idx is a permutation: one entry per row
	}
	for _, d := range devices(t) {
		t.Run(d.Kind().String(), func(t *testing.T) {
			base := settledLiveBytes(d)
			for trial := range trials {
				x := mustBuf(t, d, host)
				ix, err := NewIndices(d, idx)
				if err != nil {
					t.Fatal(err)
				}
				start, results := make(chan struct{}), make(chan error, 4)
				check := func(y *Buffer, err error, want func(i int) float32) error {
					if err != nil {
						if errors.Is(err, ErrReleased) {
							return nil
						}
						return err
					}
					got, err := y.Float32s()
					y.Release()
					if err != nil {
						return err
					}
					for i, v := range got {
						if v != want(i) {
							return fmt.Errorf("element %d: %v, want %v", i, v, want(i))
						}
					}
					return nil
				}
				go func() {
					<-start
					y, err := Scale(x, 2)
					results <- check(y, err, func(i int) float32 { return 2 * host[i] })
				}()
				go func() {
					<-start
					y, err := Sum(x)
					results <- check(y, err, func(int) float32 { return cpuSum(host) })
				}()
				go func() {
					<-start
					y, err := GatherRowsIdx(x, n, 1, ix)
					results <- check(y, err, func(i int) float32 { return host[idx[i]] })
				}()
				go func() { // the deterministic scatter also builds and uses the sorted indices
					<-start
					y, err := func() (*Buffer, error) {
						old := Deterministic()
						SetDeterministic(true)
						defer SetDeterministic(old)
						return ScatterAddRowsIdx(x, x, n, 1, ix)
					}()
					results <- check(y, err, func(i int) float32 { return host[i] + scattered[i] })
				}()
				go func() {
					<-start
					if trial%2 == 0 {
						runtime.Gosched()
					}
					x.Release()
					ix.Release()
					results <- nil
				}()
				close(start)
				for range 5 {
					if err := <-results; err != nil {
						t.Fatalf("trial %d: %v", trial, err)
					}
				}
			}
			if err := d.Sync(); err != nil {
				t.Fatal(err)
			}
			if live := settledLiveBytes(d); live != base {
				t.Fatalf("live bytes %d, want %d", live, base)
			}
		})
	}
}

// settledLiveBytes returns d's live bytes once the garbage of earlier tests is collected (the
// count stays put over a collection).
func settledLiveBytes(d *Device) int64 {
	live := d.Stats().LiveBytes
	for range 100 {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
		now := d.Stats().LiveBytes
		if now == live {
			break
		}
		live = now
	}
	return live
}

// TestEmptyBufferReleasedInUse: an empty buffer released during an op's use stays uncounted
// (Release reports false and nothing goes back to the allocator).
func TestEmptyBufferReleasedInUse(t *testing.T) {
	for _, d := range devices(t) {
		b, err := Zeros(d, 0)
		if err != nil {
			t.Fatal(err)
		}
		before := d.Stats()
		if err := b.use(); err != nil {
			t.Fatal(err)
		}
		if b.Release() {
			t.Error("Release of an empty buffer reported true")
		}
		b.done()
		if after := d.Stats(); after.FreeCount != before.FreeCount || after.LiveBytes != before.LiveBytes {
			t.Errorf("%s: %v, then %v", d.Kind(), before, after)
		}
		if err := b.use(); !errors.Is(err, ErrReleased) {
			t.Errorf("use after release: %v", err)
		}
	}
}

// cpuSum is the sum of Sum over v (on the CPU).
func cpuSum(v []float32) float32 {
	x, _ := FromFloat32(CPU(), v)
	defer x.Release()
	s, _ := Sum(x)
	f, _ := s.Float32s()
	s.Release()
	return f[0]
}

// TestNilAndZeroDevice checks that a nil or zero Device gives errors, not panics.
func TestNilAndZeroDevice(t *testing.T) {
	for _, d := range []*Device{nil, {}} {
		if _, err := Zeros(d, 3); err == nil {
			t.Errorf("Zeros(%v): no error", d)
		}
		if _, err := FromFloat32(d, []float32{1}); err == nil {
			t.Errorf("FromFloat32(%v): no error", d)
		}
		if _, err := RandUniform(d, 3, 1); err == nil {
			t.Errorf("RandUniform(%v): no error", d)
		}
		if err := d.Sync(); err == nil {
			t.Errorf("Sync(%v): no error", d)
		}
		if err := d.Collect(true); err == nil {
			t.Errorf("Collect(%v): no error", d)
		}
		if s := d.Stats(); s != (Stats{}) {
			t.Errorf("Stats(%v) = %v", d, s)
		}
		x := mustBuf(t, CPU(), []float32{1})
		if _, err := x.To(d); err == nil {
			t.Errorf("To(%v): no error", d)
		}
		x.Release()
	}
	var b *Buffer
	if b.Device() != nil || b.Len() != 0 || b.Err() == nil || b.Release() {
		t.Error("nil buffer methods")
	}
}

// TestCPUCacheBounded releases buffers of ever new sizes on a CPU backend with a 1 MiB cache
// limit: the cache keeps reusable slices but never more than the limit, and Collect(true)
// empties it.
func TestCPUCacheBounded(t *testing.T) {
	const limit = 1 << 20
	d := &Device{kind: KindCPU, name: "cpu", be: &cpuBackend{limit: limit}}
	if l := cpuCacheLimit(); l < 64<<20 || l > 1<<30 {
		t.Errorf("cpuCacheLimit %s, want 64 MiB to 1 GiB", MiB(l))
	}
	const step = limit / 4 / 64 // the sizes pass the limit after 11 releases
	for k := 1; k <= 40; k++ {
		b, err := Zeros(d, k*step+k)
		if err != nil {
			t.Fatal(err)
		}
		b.Release()
		if c := d.Stats().CachedBytes; c > limit {
			t.Fatalf("after %d releases %s cached, limit %s", k, MiB(c), MiB(limit))
		}
	}
	if d.Stats().CachedBytes == 0 {
		t.Error("nothing cached")
	}
	// A released slice of a size in the cache is reused.
	b, _ := Zeros(d, 40*step+40)
	before := d.Stats().CachedBytes
	b.Release()
	b, _ = Zeros(d, 40*step+40)
	if after := d.Stats().CachedBytes; after != before {
		t.Errorf("cached %s after reuse, want %s", MiB(after), MiB(before))
	}
	b.Release()
	if err := d.Collect(true); err != nil || d.Stats().CachedBytes != 0 {
		t.Errorf("Collect(true): %v, %s still cached", err, MiB(d.Stats().CachedBytes))
	}
}

// TestErrorsNameTheOp: an op given a released, nil or zero Buffer says so and names itself (the
// public op, not the kernel it would run); errors.Is still finds ErrReleased.
func TestErrorsNameTheOp(t *testing.T) {
	d := CPU()
	x := mustBuf(t, d, []float32{1, 2, 3, 4})
	defer x.Release()
	gone := mustBuf(t, d, []float32{1, 2, 3, 4})
	gone.Release()
	for _, in := range []struct {
		name string
		b    *Buffer
		want string
	}{{"released", gone, "released"}, {"nil", nil, "nil buffer"}, {"zero", new(Buffer), "zero Buffer"}} {
		for _, c := range []struct {
			op  string
			run func(b *Buffer) error
		}{
			{"sum", func(b *Buffer) error { _, err := Sum(b); return err }},
			{"mean", func(b *Buffer) error { _, err := Mean(b); return err }},
			{"copy", func(b *Buffer) error { _, err := Copy(b); return err }},
			{"download", func(b *Buffer) error { _, err := b.Float32s(); return err }},
			{"to", func(b *Buffer) error { _, err := b.To(d); return err }},
			{"add", func(b *Buffer) error { _, err := Add(b, x); return err }},
			{"gather_rows", func(b *Buffer) error { _, err := GatherRows(b, 2, 2, []int{0}); return err }},
			{"scatter_add_rows", func(b *Buffer) error { _, err := ScatterAddRows(b, x, 2, 2, []int{0}); return err }},
			{"reduce_sum_axis", func(b *Buffer) error { _, err := ReduceSumAxis(b, []int{4}, 0); return err }},
			{"swap_adjacent_at_depth", func(b *Buffer) error { _, err := SwapAdjacentAtDepth(b, []int{2, 2}, 0); return err }},
		} {
			err := c.run(in.b)
			if err == nil || !strings.HasPrefix(err.Error(), "ops: "+c.op+": ") || !strings.Contains(err.Error(), in.want) {
				t.Errorf("%s on a %s buffer: %v, want \"ops: %s: ...%s...\"", c.op, in.name, err, c.op, in.want)
			}
			if in.b == gone && !errors.Is(err, ErrReleased) {
				t.Errorf("%s on a released buffer: %v is not ErrReleased", c.op, err)
			}
		}
	}
	if err := new(Buffer).Err(); err == nil {
		t.Error("the zero Buffer reports no error")
	}
}

// TestEnvOn: the switch values of TORCHLEAN_DETERMINISTIC, and TorchLean's variable beside it.
func TestEnvOn(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "False": false, "off": false,
		"NO": false, " 0 ": false, "1": true, "true": true, "on": true, "yes": true, "2": true} {
		if got := envOn(v); got != want {
			t.Errorf("envOn(%q) = %v, want %v", v, got, want)
		}
	}
	// TorchLean's variable counts only when ours is unset.
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"TORCHLEAN_CUDA_DETERMINISTIC_REDUCTIONS": "1"}, true},
		{map[string]string{"TORCHLEAN_CUDA_DETERMINISTIC_REDUCTIONS": "off"}, true}, // TorchLean's rule
		{map[string]string{"TORCHLEAN_CUDA_DETERMINISTIC_REDUCTIONS": "0"}, false},
		{map[string]string{"TORCHLEAN_CUDA_DETERMINISTIC_REDUCTIONS": ""}, false},
		{map[string]string{"TORCHLEAN_DETERMINISTIC": "0", "TORCHLEAN_CUDA_DETERMINISTIC_REDUCTIONS": "1"}, false},
		{map[string]string{"TORCHLEAN_DETERMINISTIC": "on"}, true},
		{map[string]string{"TORCHLEAN_DETERMINISTIC": "", "TORCHLEAN_CUDA_DETERMINISTIC_REDUCTIONS": "1"}, true},
	} {
		lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		if got := deterministicFromEnv(lookup); got != c.want {
			t.Errorf("environment %v: deterministic %v, want %v", c.env, got, c.want)
		}
	}
}

// TestStatsSnapshotUnderLoad: Stats read while other goroutines allocate and release keeps
// FreeCount <= AllocCount and LiveBytes <= PeakBytes, and the counters settle exactly.
func TestStatsSnapshotUnderLoad(t *testing.T) {
	d := CPU()
	before := d.Stats()
	stop := make(chan struct{})
	done := make(chan struct{})
	const workers = 4
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				b, err := Zeros(d, 1+(i+w)%7)
				if err != nil {
					t.Error(err)
					return
				}
				b.Release()
			}
		}()
	}
	for range 20000 {
		s := d.Stats()
		if s.FreeCount > s.AllocCount || s.LiveBytes > s.PeakBytes {
			t.Errorf("torn snapshot: %+v", s)
			break
		}
	}
	close(stop)
	for range workers {
		<-done
	}
	after := d.Stats()
	if after.LiveBytes != before.LiveBytes || after.AllocCount-before.AllocCount != after.FreeCount-before.FreeCount {
		t.Errorf("counters did not settle: before %+v, after %+v", before, after)
	}
}
