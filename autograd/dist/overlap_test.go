package dist

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

func cpuRanks(n int) []*ops.Device {
	devs := make([]*ops.Device, n)
	for i := range devs {
		devs[i] = ops.CPU()
	}
	return devs
}

func hostGrad(p *autograd.Param) ([]float32, error) {
	if p.Grad() == nil {
		return nil, nil
	}
	return p.Grad().Float32s()
}

// TestDDPUnusedParameters: a parameter one rank does not use counts as zeros in the average; one
// no rank uses ends with a zero gradient on every rank; with and without overlap.
func TestDDPUnusedParameters(t *testing.T) {
	for _, noOverlap := range []bool{false, true} {
		got := make([][][]float32, 2)
		err := RunLocal(cpuRanks(2), RunOptions{Timeout: time.Minute}, func(w *Worker) error {
			s := autograd.NewSession(autograd.Options{Device: w.Device})
			defer s.Close()
			a := s.Param("a", []int{2}, []float32{1, 2})
			u := s.Param("used by rank 0", []int{2}, []float32{1, 2})
			z := s.Param("used by none", []int{2}, []float32{1, 2})
			d, err := New(s, w.Comm, Options{BucketBytes: 8, NoOverlap: noOverlap}) // a bucket each
			if err != nil {
				return err
			}
			x := s.Input([]float32{float32(w.Rank + 1), 4}, 2)
			loss := s.Sum(s.Mul(s.Use(a), x))
			if w.Rank == 0 {
				loss = s.Add(loss, s.Sum(s.Mul(s.Use(u), s.Input([]float32{3, 5}, 2))))
			}
			if err := d.Backward(loss); err != nil {
				return err
			}
			for _, p := range []*autograd.Param{a, u, z} {
				g, err := hostGrad(p)
				if err != nil {
					return err
				}
				got[w.Rank] = append(got[w.Rank], g)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("noOverlap=%v: %v", noOverlap, err)
		}
		want := [][]float32{{1.5, 4}, {1.5, 2.5}, {0, 0}}
		for r := range 2 {
			for i := range want {
				if !slices.Equal(got[r][i], want[i]) {
					t.Errorf("noOverlap=%v rank %d: gradients %v, want %v", noOverlap, r, got[r], want)
					break
				}
			}
		}
	}
}

// deepMLP is an MLP of layers square layers of width w (tanh between them) on a session.
type deepMLP struct {
	s      *autograd.Session
	ws, bs []*autograd.Param
}

func newDeepMLP(s *autograd.Session, layers, w int) *deepMLP {
	m := &deepMLP{s: s}
	k := 1 / math.Sqrt(float64(w))
	for l := range layers {
		m.ws = append(m.ws, s.ParamUniform(fmt.Sprintf("fc%d.weight", l), []int{w, w}, -k, k))
		m.bs = append(m.bs, s.ParamUniform(fmt.Sprintf("fc%d.bias", l), []int{w}, -k, k))
	}
	return m
}

// loss records the mean squared output of batch examples that depend on rank and step.
func (m *deepMLP) loss(rank, step, batch int) autograd.Var {
	s := m.s
	w := m.ws[0].Shape()[0]
	x := make([]float32, batch*w)
	for i := range x {
		x[i] = float32(math.Sin(float64(i+1)*0.013 + float64(rank*7+step)*0.7))
	}
	h := s.Input(x, batch, w)
	for l := range m.ws {
		h = s.Linear(h, s.Use(m.ws[l]), s.Use(m.bs[l]))
		if l+1 < len(m.ws) {
			h = s.Tanh(h)
		}
	}
	return s.Mean(s.Mul(h, h))
}

// TestDDPAccumulation: two micro-batches through BackwardNoSync then Backward give the bits of
// accumulating both locally and averaging the sums once (AllReduceGrads), with and without
// overlap, the same on every rank.
func TestDDPAccumulation(t *testing.T) {
	for _, noOverlap := range []bool{false, true} {
		got := make([][]float32, 2)
		err := RunLocal(cpuRanks(2), RunOptions{Timeout: time.Minute}, func(w *Worker) error {
			s := autograd.NewSession(autograd.Options{Device: w.Device, Seed: 4})
			defer s.Close()
			m := newDeepMLP(s, 3, 8)
			d, err := New(s, w.Comm, Options{BucketBytes: 300, NoOverlap: noOverlap})
			if err != nil {
				return err
			}
			grads := func() ([]float32, error) {
				var all []float32
				for _, p := range s.Params() {
					g, err := hostGrad(p)
					if err != nil {
						return nil, err
					}
					all = append(all, g...)
				}
				return all, nil
			}
			s.Reset()
			if err := d.BackwardNoSync(m.loss(w.Rank, 0, 3)); err != nil {
				return err
			}
			s.Reset()
			if err := d.Backward(m.loss(w.Rank, 1, 3)); err != nil {
				return err
			}
			ddp, err := grads()
			if err != nil {
				return err
			}
			s.ZeroGrad()
			for step := range 2 {
				s.Reset()
				if err := s.Backward(m.loss(w.Rank, step, 3)); err != nil {
					return err
				}
			}
			if err := d.AllReduceGrads(); err != nil {
				return err
			}
			ref, err := grads()
			if err != nil {
				return err
			}
			if !slices.Equal(ddp, ref) {
				return fmt.Errorf("accumulated gradients differ from the reference")
			}
			got[w.Rank] = ddp
			return nil
		})
		if err != nil {
			t.Fatalf("noOverlap=%v: %v", noOverlap, err)
		}
		if !slices.Equal(got[0], got[1]) || len(got[0]) != 3*(64+8) {
			t.Errorf("noOverlap=%v: ranks differ or wrong length %d", noOverlap, len(got[0]))
		}
	}
}

// TestDDPOverlapStartsEarly: with overlap, the last layer's bucket is handed to the reducer
// while the backward pass has not yet reached the first layer (whose gradient is still none),
// and the buckets start in order.
func TestDDPOverlapStartsEarly(t *testing.T) {
	err := RunLocal(cpuRanks(2), RunOptions{Timeout: time.Minute}, func(w *Worker) error {
		s := autograd.NewSession(autograd.Options{Device: w.Device, Seed: 1})
		defer s.Close()
		m := newDeepMLP(s, 4, 16)
		d, err := New(s, w.Comm, Options{BucketBytes: 4 * (16*16 + 16)}) // a layer per bucket
		if err != nil {
			return err
		}
		if len(d.buckets) != 4 {
			return fmt.Errorf("%d buckets: %v", len(d.buckets), d.Buckets())
		}
		var order []int
		firstLayerDone := map[int]bool{}
		d.onLaunch = func(k int) {
			order = append(order, k)
			firstLayerDone[k] = m.ws[0].Grad() != nil
		}
		for step := range 2 {
			s.Reset()
			if err := d.Backward(m.loss(w.Rank, step, 4)); err != nil {
				return err
			}
			s.ZeroGrad()
		}
		if !slices.Equal(order, []int{0, 1, 2, 3, 0, 1, 2, 3}) {
			return fmt.Errorf("buckets started in the order %v", order)
		}
		if firstLayerDone[0] || !firstLayerDone[3] {
			return fmt.Errorf("first layer's gradient present at the start of bucket 0: %v, of bucket 3: %v", firstLayerDone[0], firstLayerDone[3])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// linkExchanger is an ops.Exchanger that delays each exchange as a network link would: a
// latency plus the bytes sent and received at a bandwidth (sleeping, so it costs no CPU).
type linkExchanger struct {
	x         ops.Exchanger
	latency   time.Duration
	bytesPerS float64
}

func (l linkExchanger) AllGather(data []float32) ([][]float32, error) {
	time.Sleep(l.latency + time.Duration(float64(2*4*len(data))/l.bytesPerS*float64(time.Second)))
	return l.x.AllGather(data)
}

func (l linkExchanger) Abort(err error) { l.x.Abort(err) }

// TestDDPOverlapTiming measures the step time (forward, backward with the gradient average,
// SGD step) of 2 in-process CPU ranks training an MLP of 6 layers of 512 (1.6M parameters,
// buckets of 1 MiB) with the all-reduces overlapping the backward pass and after it, in
// interleaved rounds, and logs the medians: over the in-process exchange (the reduction's CPU
// work only), and over a simulated link (100 us latency, 1 GB/s). It runs only when
// TORCHLEAN_DDP_TIMING is set (to the number of rounds, default 5).
func TestDDPOverlapTiming(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("TORCHLEAN_DDP_TIMING"))
	if os.Getenv("TORCHLEAN_DDP_TIMING") == "" {
		t.Skip("set TORCHLEAN_DDP_TIMING=rounds to measure")
	}
	rounds = max(rounds, 1)
	const layers, width, batch, steps = 6, 512, 64, 8
	measure := func(link bool, noOverlap bool) time.Duration {
		g, err := ops.NewLocalGroup(2, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		times := make([]time.Duration, 2)
		errs := make(chan error, 2)
		for r := range 2 {
			go func() {
				errs <- func() error {
					var x ops.Exchanger = g.Rank(r)
					if link {
						x = linkExchanger{x: x, latency: 100 * time.Microsecond, bytesPerS: 1e9}
					}
					c, err := ops.NewHostComm(ops.CPU(), r, 2, x, ops.CommOptions{Timeout: time.Minute})
					if err != nil {
						return err
					}
					s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 2})
					defer s.Close()
					m := newDeepMLP(s, layers, width)
					d, err := New(s, c, Options{BucketBytes: 1 << 20, NoOverlap: noOverlap})
					if err != nil {
						return err
					}
					opt := autograd.NewSGD(s.Params(), autograd.SGDOptions{LR: 0.01})
					var start time.Time
					for step := range steps + 1 {
						if step == 1 { // the first step warms the allocator up
							start = time.Now()
						}
						s.Reset()
						if err := d.Backward(m.loss(r, step, batch)); err != nil {
							return err
						}
						if err := opt.Step(); err != nil {
							return err
						}
						opt.ZeroGrad()
					}
					times[r] = time.Since(start) / steps
					return nil
				}()
			}()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		return max(times[0], times[1])
	}
	median := func(v []time.Duration) time.Duration {
		v = slices.Clone(v)
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		return v[len(v)/2]
	}
	for _, link := range []bool{false, true} {
		var on, off []time.Duration
		for range rounds {
			on = append(on, measure(link, false))
			off = append(off, measure(link, true))
		}
		name := "in-process exchange"
		if link {
			name = "simulated link (100 us, 1 GB/s)"
		}
		t.Logf("%s: step %v with overlap, %v without (medians of %d interleaved rounds; on %v, off %v)",
			name, median(on).Round(100*time.Microsecond), median(off).Round(100*time.Microsecond), rounds, on, off)
	}
}
