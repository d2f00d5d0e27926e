// Package stepbench times the examples' training steps for the model benchmark suite of the GPU
// check (issue 27, item 5): BenchmarkModelStep/<model>/eager and /graph in each example's
// tests, against internal/bench/torch_models.py's PyTorch twins of the same models
// (internal/bench/models_table.py prints the table).
//
// A row is one training step (forward, loss, backward, optimizer step, the learning-rate
// schedule stepped after it) on a synthetic batch of the example's shapes that stays on the
// device: warm-up steps, then b.N steps and one device synchronization, so ns/op is the time
// per step of a training loop that does not read its loss back every step. The graph variant
// offers the step to autograd.Session.Capture (examples/internal/graphstep.Offer) after an eager
// step and replays it, copying the batch into the static inputs before each replay; it reports
// the metric "captured" (1: the replays were CUDA graphs; 0: the capture refused a call of the
// step, or the device cannot capture, and the row times the eager steps, the reason logged).
//
// The rows run on the default device (ops.Default: CUDA when usable, else the CPU, or
// TORCHLEAN_DEVICE=cpu; under TORCHLEAN_REQUIRE_CUDA=1 the CPU is an error). Rows marked Large (the GPU-sized models) skip on the CPU unless
// TORCHLEAN_BENCH_LARGE=1: one of their steps takes seconds there.
package stepbench

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep"
	"github.com/torchlean-go/torchlean/ops"
)

// Step is one model's training step, made by a Case's Build on a device.
type Step struct {
	// Sess is the session of the model and its optimizer.
	Sess *autograd.Session
	// Eager records one training step as the example's eager loop does (without reading the
	// loss back) and returns the session's error.
	Eager func() error
	// Body is the step offered to the capture: one whole training step on the static inputs
	// (nil: Eager, for the examples whose step reads its batch from the host and is refused).
	Body func() error
	// Load copies the batch into the static inputs before each run of Body (nil: nothing).
	Load func() error
	// Sched is the learning-rate schedule, stepped after every step (nil: a constant rate).
	Sched nn.Scheduler
	// Close frees the step's buffers, its optimizer and its session.
	Close func()
}

// Case is one model of the suite.
type Case struct {
	// Name is the sub-benchmark's name (BenchmarkModelStep/<Name>/...), the model's key in
	// torch_models.py's JSON.
	Name string
	// Large marks a GPU-sized model, skipped on the CPU unless TORCHLEAN_BENCH_LARGE=1.
	Large bool
	// Build returns the model's step on d, its parameters initialized from a fixed seed.
	Build func(d *ops.Device) (*Step, error)
}

// Run runs BenchmarkModelStep/<case>/eager and /graph for each case.
func Run(b *testing.B, cases []Case) {
	d := ops.Default()
	if d.Kind() == ops.KindCPU && os.Getenv("TORCHLEAN_REQUIRE_CUDA") == "1" {
		b.Fatalf("stepbench: CUDA required (TORCHLEAN_REQUIRE_CUDA=1) but the default device is %s: %s", d, ops.DefaultSelection().Reason)
	}
	for _, c := range cases {
		b.Run(c.Name, func(b *testing.B) {
			if c.Large && d.Kind() == ops.KindCPU && os.Getenv("TORCHLEAN_BENCH_LARGE") != "1" {
				b.Skipf("%s: a GPU-sized model on %s (TORCHLEAN_BENCH_LARGE=1 runs it)", c.Name, d)
			}
			b.Run("eager", func(b *testing.B) { run(b, c, d, false) })
			b.Run("graph", func(b *testing.B) { run(b, c, d, true) })
		})
	}
}

// warmups returns the untimed steps before the timing: enough on a GPU for the allocator's
// cache, the kernels' first loads and the graph's first replay; one on the CPU.
func warmups(d *ops.Device) int {
	if d.Kind() == ops.KindCPU {
		return 1
	}
	return 5
}

// run times c's step on d: eagerly, or (graph) offered to the capture after one eager step and
// run through the Step it returns, the batch loaded before each run; graph reports "captured".
func run(b *testing.B, c Case, d *ops.Device, graph bool) {
	st, err := c.Build(d)
	if err != nil {
		b.Fatal(err)
	}
	var captured *autograd.Step
	defer func() {
		if captured != nil {
			if err := captured.Close(); err != nil {
				b.Error(err)
			}
		}
		st.Close()
	}()
	s := st.Sess
	body := st.Body
	if body == nil {
		body = st.Eager
	}
	one := st.Eager // one training step, without the schedule
	if graph {
		one = func() error {
			if st.Load != nil {
				if err := st.Load(); err != nil {
					return err
				}
			}
			return body()
		}
	}
	stepOnce := func() error {
		if err := one(); err != nil {
			return err
		}
		if st.Sched != nil {
			st.Sched.Step()
		}
		return nil
	}
	warm := warmups(d)
	if graph {
		// One eager step (the optimizer's state), then the offer. The Step of a device that
		// cannot capture runs body eagerly; a refusal leaves the eager steps.
		if err := stepOnce(); err != nil {
			b.Fatal(err)
		}
		warm--
		step, refused, err := graphstep.Offer(s, body)
		switch {
		case err != nil:
			b.Fatal(err)
		case refused != nil:
			b.Logf("%s: not captured: %v", c.Name, refused)
		case !step.Captured():
			b.Logf("%s: not captured: %v", c.Name, step.Reason())
			captured = step
		default:
			captured = step
		}
		if captured != nil {
			one = func() error {
				if st.Load != nil {
					if err := st.Load(); err != nil {
						return err
					}
				}
				return captured.Run()
			}
		}
	}
	for range warm {
		if err := stepOnce(); err != nil {
			b.Fatal(err)
		}
	}
	if err := errors.Join(s.Err(), d.Sync()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := stepOnce(); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
	if graph {
		ok := 0.0
		if captured != nil && captured.Captured() {
			ok = 1
		}
		b.ReportMetric(ok, "captured")
	}
}

// Labels returns n class labels in [0, classes) drawn from seed, and the same labels as one-hot
// rows (n, classes), row-major.
func Labels(seed uint64, n, classes int) ([]int, []float32) {
	r := newRand(seed)
	labels := make([]int, n)
	onehot := make([]float32, n*classes)
	for i := range labels {
		labels[i] = int(r.next() % uint64(classes))
		onehot[i*classes+labels[i]] = 1
	}
	return labels, onehot
}

// Tokens returns n token ids in [0, vocab) drawn from seed.
func Tokens(seed uint64, n, vocab int) []int {
	r := newRand(seed)
	out := make([]int, n)
	for i := range out {
		out[i] = int(r.next() % uint64(vocab))
	}
	return out
}

// Uniform returns n values uniform in [0, 1) drawn from seed.
func Uniform(seed uint64, n int) []float32 {
	r := newRand(seed)
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.next()>>40) / (1 << 24)
	}
	return out
}

// rand is SplitMix64: the synthetic batches only need to be fixed and of the right range.
type rand struct{ s uint64 }

func newRand(seed uint64) *rand { return &rand{s: seed} }

func (r *rand) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Upload returns values on d, or an error naming what.
func Upload(d *ops.Device, what string, values []float32) (*ops.Buffer, error) {
	buf, err := ops.FromFloat32(d, values)
	if err != nil {
		return nil, fmt.Errorf("stepbench: %s: %w", what, err)
	}
	return buf, nil
}

// TextStep is the Step of the text examples' training step (gpt, ssm): on a fresh tape,
// backward from loss, the gradient norm clipped to 1 (graphstep.ClipGradNorm, on the device for
// the graph row), opt's step, zeroed gradients. The eager row runs loss(nil), on the host batch
// as the example without -graph does; the graph row runs loss on the static inputs, which
// newStatic makes at the graph row's first Load and load refills before each run. Close frees
// the static inputs (release), then opt and s.
func TextStep[S any](s *autograd.Session, params []*autograd.Param, opt *autograd.Adam, sched nn.Scheduler,
	loss func(st *S) autograd.Var, newStatic func() (*S, error), load func(*S) error, release func(*S)) *Step {
	var st *S
	step := func(on *S) error {
		s.Reset()
		s.Backward(loss(on))
		if err := graphstep.ClipGradNorm(params, 1, on != nil); err != nil {
			return err
		}
		if err := opt.Step(); err != nil {
			return err
		}
		opt.ZeroGrad()
		return s.Err()
	}
	return &Step{
		Sess:  s,
		Eager: func() error { return step(nil) },
		Body:  func() error { return step(st) },
		Load: func() error {
			if st == nil {
				var err error
				if st, err = newStatic(); err != nil {
					return err
				}
			}
			return load(st)
		},
		Sched: sched,
		Close: func() {
			if st != nil {
				release(st)
			}
			opt.Close()
			s.Close()
		},
	}
}
