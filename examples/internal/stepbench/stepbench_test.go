package stepbench

import (
	"flag"
	"slices"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// counts are the calls a Case's Step received.
type counts struct {
	eager, body, load, closed int
	lr                        float64 // the learning rate at Close
}

// countingCase returns a Case whose steps count their calls (the last Build's in *last) and
// step sched's schedule.
func countingCase(t *testing.T, last **counts, withBody bool) Case {
	return Case{Name: "counting", Build: func(d *ops.Device) (*Step, error) {
		c := &counts{}
		*last = c
		s := autograd.NewSession(autograd.Options{Device: d, Seed: 1})
		p := s.Param("w", []int{2}, []float32{1, 2})
		opt := autograd.NewSGD([]*autograd.Param{p}, autograd.SGDOptions{LR: 1})
		sched, err := nn.NewLinearLR(opt, 1, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		st := &Step{
			Sess:  s,
			Eager: func() error { c.eager++; return s.Err() },
			Load:  func() error { c.load++; return nil },
			Sched: sched,
			Close: func() { c.closed++; c.lr = opt.LR(); opt.Close(); s.Close() },
		}
		if withBody {
			st.Body = func() error { c.body++; return s.Err() }
		}
		return st, nil
	}}
}

// TestRunCPU runs both variants on the CPU with -test.benchtime 3x: the warm-up step, then 3
// timed ones; the graph variant runs Load and Body (Eager without a Body), offered to a capture
// that the CPU does not have, and reports captured 0; the schedule steps after every step; the
// Step is closed.
func TestRunCPU(t *testing.T) {
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set("3x"); err != nil {
		t.Fatal(err)
	}
	defer bt.Value.Set(old)
	for _, withBody := range []bool{true, false} {
		for _, graph := range []bool{false, true} {
			var last *counts
			c := countingCase(t, &last, withBody)
			res := testing.Benchmark(func(b *testing.B) { run(b, c, ops.CPU(), graph) })
			if res.N != 3 {
				t.Fatalf("body %v graph %v: N = %d, want 3", withBody, graph, res.N)
			}
			// One warm-up step on the CPU, then 3; the schedule stepped 4 times: 1 - 4/10.
			want := counts{eager: 4, closed: 1, lr: 0.6}
			if graph {
				want = counts{load: 4, body: 4, closed: 1, lr: 0.6}
				if !withBody {
					want = counts{load: 4, eager: 4, closed: 1, lr: 0.6}
				}
				if got, ok := res.Extra["captured"]; !ok || got != 0 {
					t.Errorf("body %v: captured metric %v (present %v), want 0 on the CPU", withBody, got, ok)
				}
			} else if _, ok := res.Extra["captured"]; ok {
				t.Errorf("body %v: the eager variant reports captured", withBody)
			}
			if *last != want {
				t.Errorf("body %v graph %v: calls %+v, want %+v", withBody, graph, *last, want)
			}
		}
	}
}

// TestSyntheticData checks the synthetic batches: fixed by their seed, in range, the one-hot
// rows matching the labels.
func TestSyntheticData(t *testing.T) {
	labels, onehot := Labels(3, 50, 10)
	again, _ := Labels(3, 50, 10)
	if !slices.Equal(labels, again) {
		t.Error("Labels differ for the same seed")
	}
	for i, l := range labels {
		if l < 0 || l >= 10 {
			t.Fatalf("label %d = %d", i, l)
		}
		for j := range 10 {
			want := float32(0)
			if j == l {
				want = 1
			}
			if onehot[i*10+j] != want {
				t.Fatalf("onehot[%d][%d] = %v, label %d", i, j, onehot[i*10+j], l)
			}
		}
	}
	seen := map[int]bool{}
	for _, tok := range Tokens(1, 1000, 91) {
		if tok < 0 || tok >= 91 {
			t.Fatalf("token %d out of [0, 91)", tok)
		}
		seen[tok] = true
	}
	if len(seen) < 80 {
		t.Errorf("1000 tokens hit only %d of 91 ids", len(seen))
	}
	if slices.Equal(Tokens(1, 100, 91), Tokens(2, 100, 91)) {
		t.Error("Tokens equal for seeds 1 and 2")
	}
	for i, v := range Uniform(5, 1000) {
		if !(v >= 0 && v < 1) {
			t.Fatalf("Uniform[%d] = %v", i, v)
		}
	}
}
