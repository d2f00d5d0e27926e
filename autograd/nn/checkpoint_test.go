package nn

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// run is one training run of the checkpoint tests: an MLP with dropout, AdamW, a warm-up into a
// cosine schedule, and a shuffling loader over a fixed data set.
type run struct {
	s      *autograd.Session
	model  *Sequential
	opt    *autograd.Adam
	sched  Scheduler
	loader *Loader
}

const (
	ckExamples = 40
	ckBatch    = 8 // 5 batches an epoch
)

func newRun(t *testing.T, d *ops.Device, seed uint64) *run {
	t.Helper()
	s := autograd.NewSession(autograd.Options{Device: d, Seed: seed})
	model := NewMLP(s, []int{6, 16, 3}, MLPOptions{Dropout: 0.25})
	opt := autograd.NewAdamW(Parameters(model), autograd.AdamOptions{LR: 0.01, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.01})
	cos, err := NewCosineAnnealingLR(opt, 12, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := NewLinearWarmup(opt, 3, 0.1, cos)
	if err != nil {
		t.Fatal(err)
	}
	features := make([]float32, ckExamples*6)
	labels := make([]int, ckExamples)
	for i := range features {
		features[i] = float32((i*7919)%23)/11 - 1
	}
	for i := range labels {
		labels[i] = (i * 5) % 3
	}
	src, err := NewTensorSource(Layout{Features: []int{6}, Labels: []int{}}, features, nil, labels)
	if err != nil {
		t.Fatal(err)
	}
	loader, err := NewLoader(src, LoaderOptions{BatchSize: ckBatch, Shuffle: true, Seed: 3, Device: d, Prefetch: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{s, model, opt, sched, loader}
	t.Cleanup(func() {
		loader.Close()
		opt.Close()
		s.Close()
	})
	return r
}

// train runs the steps [from, to) (global step numbers; an epoch is 5 steps).
func (r *run) train(t *testing.T, from, to int) {
	t.Helper()
	per := r.loader.Len()
	for step := from; step < to; {
		epoch := step / per
		for b := range r.loader.EpochFrom(epoch, step%per) {
			if step >= to {
				break
			}
			r.s.Reset()
			loss := r.s.CrossEntropy(r.model.Forward(r.s.Const(b.X, b.XShape)), b.Labels)
			r.s.Backward(loss)
			r.opt.Step()
			r.opt.ZeroGrad()
			r.sched.Step()
			step++
		}
		if err := r.loader.Err(); err != nil {
			t.Fatal(err)
		}
	}
	r.s.Reset()
	if err := r.s.Err(); err != nil {
		t.Fatal(err)
	}
}

func (r *run) params(t *testing.T) [][]float32 {
	var out [][]float32
	for _, np := range NamedState(r.model) {
		v, err := np.Param.Host()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestCheckpointResume: a run saved after 7 steps and resumed in a new session (with a model,
// optimizer and scheduler built afresh, from another seed) ends with the same bits as the run
// that was never stopped, over dropout, AdamW's moments and step counts, the schedule and the
// loader's shuffled order.
func TestCheckpointResume(t *testing.T) {
	for _, d := range testDevices() {
		t.Run(d.String(), func(t *testing.T) {
			const total, stop = 13, 7
			whole := newRun(t, d, 1)
			whole.train(t, 0, total)

			first := newRun(t, d, 1)
			first.train(t, 0, stop)
			path := filepath.Join(t.TempDir(), "run.safetensors")
			ck := Checkpoint{Model: first.model, Optimizer: first.opt, Scheduler: first.sched, Session: first.s,
				Step: stop, Meta: map[string]string{"note": "resume test"}}
			if err := ck.Save(path); err != nil {
				t.Fatal(err)
			}

			second := newRun(t, d, 99)
			ck2 := Checkpoint{Model: second.model, Optimizer: second.opt, Scheduler: second.sched, Session: second.s}
			if err := ck2.Load(path); err != nil {
				t.Fatal(err)
			}
			if ck2.Step != stop || ck2.Meta["note"] != "resume test" {
				t.Fatalf("loaded step %d meta %v", ck2.Step, ck2.Meta)
			}
			if second.opt.LR() != first.opt.LR() {
				t.Fatalf("learning rate %v after Load, saved %v", second.opt.LR(), first.opt.LR())
			}
			second.train(t, stop, total)
			a, b := whole.params(t), second.params(t)
			for i := range a {
				if !slices.Equal(a[i], b[i]) {
					t.Fatalf("%s differs from the uninterrupted run's", NamedState(whole.model)[i].Key)
				}
			}
		})
	}
}

// testDevices are the CPU and, when one is usable, the default CUDA device.
func testDevices() []*ops.Device {
	ds := []*ops.Device{ops.CPU()}
	if d := ops.Default(); d.Kind() != ops.KindCPU {
		ds = append(ds, d)
	}
	return ds
}

func TestCheckpointMismatch(t *testing.T) {
	r := newRun(t, ops.CPU(), 1)
	r.train(t, 0, 2)
	path := filepath.Join(t.TempDir(), "run.safetensors")
	ck := Checkpoint{Model: r.model, Optimizer: r.opt, Scheduler: r.sched, Session: r.s, Step: 2}
	if err := ck.Save(path); err != nil {
		t.Fatal(err)
	}
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	wider := NewMLP(s, []int{6, 17, 3}, MLPOptions{})
	err := (&Checkpoint{Model: wider, Session: s}).Load(path)
	if err == nil || !strings.Contains(err.Error(), "0.weight") {
		t.Fatalf("a wider model: %v, want an error naming 0.weight", err)
	}
	same := NewMLP(s, []int{6, 16, 3}, MLPOptions{Dropout: 0.25}) // keys 0.* and 3.*, as saved
	if err := (&Checkpoint{Model: same, Session: s}).Load(path); err == nil || !strings.Contains(err.Error(), "optimizer") {
		t.Fatalf("optimizer state and no optimizer: %v", err)
	}
	opt := autograd.NewSGD(Parameters(same), autograd.SGDOptions{LR: 0.1, Momentum: 0.9})
	defer opt.Close()
	if err := (&Checkpoint{Model: same, Optimizer: opt, Session: s}).Load(path); err == nil {
		t.Fatal("AdamW's state loaded into SGD")
	}
	if err := SaveWeights(path, same); err != nil {
		t.Fatal(err)
	}
	if err := (&Checkpoint{Model: same, Session: s}).Load(path); err == nil || !strings.Contains(err.Error(), "LoadWeights") {
		t.Fatalf("a weights file: %v", err)
	}
	if err := (&Checkpoint{Model: same, Session: s, Meta: map[string]string{"torchlean.step": "1"}}).Save(path); err == nil {
		t.Fatal("a reserved metadata key was saved")
	}
}

// TestCheckpointKilledWrite kills a process in the middle of writing checkpoints over an
// existing one, several times: the file that remains always loads, holding one of the complete
// checkpoints.
func TestCheckpointKilledWrite(t *testing.T) {
	if path := os.Getenv("NN_CHECKPOINT_WRITER"); path != "" {
		checkpointWriter(t, path) // the child: never returns
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "big.safetensors")
	for round := range 6 {
		cmd := exec.Command(exe, "-test.run=^TestCheckpointKilledWrite$")
		cmd.Env = append(os.Environ(), "NN_CHECKPOINT_WRITER="+path)
		if err := cmd.Start(); err != nil {
			t.Skip(err)
		}
		// Wait for the first complete file, then kill at a moment that moves each round.
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(path); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("the writer wrote no checkpoint")
			}
		}
		time.Sleep(time.Duration(30+45*round) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
		m := bigModel(s)
		ck := Checkpoint{Model: m, Session: s}
		if err := ck.Load(path); err != nil {
			t.Fatalf("round %d: the checkpoint left by a killed writer does not load: %v", round, err)
		}
		w, _ := m.Layers[0].(*Linear).Weight.Host()
		if float64(w[0]) != float64(ck.Step) || float64(w[len(w)-1]) != float64(ck.Step) {
			t.Fatalf("round %d: step %d with weights %v ... %v: a torn checkpoint", round, ck.Step, w[0], w[len(w)-1])
		}
		s.Close()
		t.Logf("round %d: the file held step %d", round, ck.Step)
	}
	// A write cut short leaves its temporary file beside the checkpoint, never in its place.
	torn, _ := filepath.Glob(filepath.Join(dir, ".big.safetensors.*.tmp"))
	t.Logf("%d writes were cut short", len(torn))
}

func bigModel(s *autograd.Session) *Sequential {
	return NewSequential(NewLinear(s, 1024, 2048, false))
}

// checkpointWriter saves checkpoints to path in a loop, checkpoint k with every weight k, until
// it is killed.
func checkpointWriter(t *testing.T, path string) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	m := bigModel(s)
	w := m.Layers[0].(*Linear).Weight
	vals := make([]float32, 1024*2048)
	for k := 1; ; k++ {
		vals[0], vals[len(vals)-1] = float32(k), float32(k)
		if err := w.Set(vals); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := (&Checkpoint{Model: m, Session: s, Step: k}).Save(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}
