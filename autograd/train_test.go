package autograd_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/internal/testenv"
	"github.com/torchlean-go/torchlean/ops"
)

// mlp is a classifier Linear-ReLU-...-Linear on a session, initialized like PyTorch's
// nn.Linear (uniform in ±1/sqrt(fan-in)) from the session's seed.
type mlp struct{ w, b []*autograd.Param }

func newMLP(s *autograd.Session, widths ...int) *mlp {
	m := &mlp{}
	for l := 0; l+1 < len(widths); l++ {
		in, out := widths[l], widths[l+1]
		bound := 1 / math.Sqrt(float64(in))
		m.w = append(m.w, s.ParamUniform(fmt.Sprintf("w%d", l), []int{out, in}, -bound, bound))
		m.b = append(m.b, s.ParamUniform(fmt.Sprintf("b%d", l), []int{out}, -bound, bound))
	}
	return m
}

// loss records the mean cross-entropy of the logits of x against labels.
func (m *mlp) loss(s *autograd.Session, x autograd.Var, labels []int) autograd.Var {
	h := x
	for l := range m.w {
		h = s.Linear(h, s.Use(m.w[l]), s.Use(m.b[l]))
		if l+1 < len(m.w) {
			h = s.Relu(h)
		}
	}
	return s.CrossEntropy(h, labels)
}

// trainData is a fixed pseudo-random batch: inputs in [0, 1) and labels in [0, classes).
func trainData(batch, in, classes int) ([]float32, []int) {
	x := make([]float32, batch*in)
	for i := range x {
		x[i] = float32(i*7919%1000) / 1000
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = i * 31 % classes
	}
	return x, labels
}

// trainRun trains a 64-32-32-10 MLP with AdamW for steps steps in deterministic mode on d and
// returns the losses and the final parameters, as bits.
func trainRun(t *testing.T, d *ops.Device, steps int) (losses []uint32, params [][]uint32) {
	t.Helper()
	defer ops.SetDeterministic(ops.Deterministic())
	s := autograd.NewSession(autograd.Options{Device: d, Deterministic: true, Seed: 11})
	defer s.Close()
	m := newMLP(s, 64, 32, 32, 10)
	opt := autograd.NewAdamW(s.Params(), autograd.DefaultAdamW())
	x, labels := trainData(16, 64, 10)
	for range steps {
		s.Reset()
		loss := m.loss(s, s.Dropout(s.Input(x, 16, 64), 0.1), labels)
		s.Backward(loss)
		opt.Step()
		opt.ZeroGrad()
		losses = append(losses, math.Float32bits(s.Item(loss)))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Params() {
		v, err := p.Host()
		if err != nil {
			t.Fatal(err)
		}
		bits := make([]uint32, len(v))
		for i, f := range v {
			bits[i] = math.Float32bits(f)
		}
		params = append(params, bits)
	}
	return losses, params
}

func modelHash(losses []uint32, params [][]uint32) string {
	h := sha256.New()
	for _, v := range append([][]uint32{losses}, params...) {
		binary.Write(h, binary.LittleEndian, v)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

const modelGolden = "testdata/model-golden.txt"

// TestModelMirror (GPU) trains the same MLP for 50 steps on the CPU and on the GPU and requires
// identical losses and parameters, bit for bit; it writes the hash to
// $TORCHLEAN_GOLDEN_OUT/model-golden.txt for TestModelGolden.
func TestModelMirror(t *testing.T) {
	gpu, err := ops.Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	cl, cp := trainRun(t, ops.CPU(), 50)
	gl, gp := trainRun(t, gpu, 50)
	for i := range cl {
		if cl[i] != gl[i] {
			t.Fatalf("step %d: loss %g on the CPU, %g on the GPU", i, math.Float32frombits(cl[i]), math.Float32frombits(gl[i]))
		}
	}
	for k := range cp {
		for i := range cp[k] {
			if cp[k][i] != gp[k][i] {
				t.Fatalf("parameter %d element %d: %#x on the CPU, %#x on the GPU", k, i, cp[k][i], gp[k][i])
			}
		}
	}
	t.Logf("50 steps: final loss %g on both devices", math.Float32frombits(gl[len(gl)-1]))
	if dir := os.Getenv("TORCHLEAN_GOLDEN_OUT"); dir != "" {
		text := "# hash of the losses and parameters of TestModelMirror's GPU run\n" + modelHash(gl, gp) + "\n"
		if err := os.WriteFile(filepath.Join(dir, "model-golden.txt"), []byte(text), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// TestModelGolden (CPU) trains the model of TestModelMirror on the CPU and compares with the
// hash a GPU run recorded.
func TestModelGolden(t *testing.T) {
	text, err := os.ReadFile(modelGolden)
	if err != nil {
		t.Fatalf("%v (write it from a GPU run of TestModelMirror with TORCHLEAN_GOLDEN_OUT)", err)
	}
	var want string
	for _, line := range strings.Split(string(text), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			want = strings.TrimSpace(line)
		}
	}
	losses, params := trainRun(t, ops.CPU(), 50)
	if got := modelHash(losses, params); got != want {
		t.Errorf("CPU training hash %s, the GPU recorded %s", got, want)
	}
	if first, last := math.Float32frombits(losses[0]), math.Float32frombits(losses[len(losses)-1]); !(last < 0.9*first) {
		t.Errorf("loss %g -> %g in 50 steps: not learning", first, last)
	}
}

// TestTrainingLeak trains an MLP for many steps (10,000 on a GPU, 1001 on the CPU; TORCHLEAN_LEAK_STEPS
// overrides) and requires the live bytes to stay flat after the first steps and every buffer
// created to be freed (allocs - frees back to the starting difference after Close).
func TestTrainingLeak(t *testing.T) {
	for _, dev := range []string{"cpu", "cuda"} {
		t.Run(dev, func(t *testing.T) {
			d, err := ops.Open(dev)
			if dev == "cuda" {
				testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
			} else if err != nil {
				t.Fatal(err)
			}
			steps := 1001
			if dev == "cuda" {
				steps = 10000
			}
			if v := os.Getenv("TORCHLEAN_LEAK_STEPS"); v != "" {
				fmt.Sscan(v, &steps)
			}
			start := d.Stats()
			s := autograd.NewSession(autograd.Options{Device: d, Seed: 3})
			m := newMLP(s, 64, 128, 128, 10)
			opt := autograd.NewAdamW(s.Params(), autograd.DefaultAdamW())
			x, labels := trainData(32, 64, 10)
			var warm ops.Stats
			for step := range steps {
				s.Reset()
				s.Backward(m.loss(s, s.Input(x, 32, 64), labels))
				opt.Step()
				opt.ZeroGrad()
				if step == 10 {
					warm = d.Stats()
				}
				if step > 10 && step%500 == 0 {
					if now := d.Stats(); now.LiveBytes != warm.LiveBytes {
						t.Fatalf("step %d: live bytes %d, %d after warm-up", step, now.LiveBytes, warm.LiveBytes)
					}
				}
			}
			s.Reset()
			end := d.Stats()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			closed := d.Stats()
			t.Logf("%d steps: live %s after warm-up, %s at the end; %d buffers created, peak %s",
				steps, ops.MiB(warm.LiveBytes), ops.MiB(end.LiveBytes), closed.AllocCount-start.AllocCount, ops.MiB(closed.PeakBytes))
			if closed.LiveBytes != start.LiveBytes {
				t.Errorf("live bytes %d after Close, %d before the session", closed.LiveBytes, start.LiveBytes)
			}
			if got, want := closed.AllocCount-closed.FreeCount, start.AllocCount-start.FreeCount; got != want {
				t.Errorf("allocs - frees = %d after Close, %d before", got, want)
			}
		})
	}
}

// BenchmarkTrainStep times one training step of the 784-512-512-10 MLP at batch 128 with AdamW
// (the batch resident on the device, as in internal/bench/torch_bench.py's train_steps): reset,
// forward, cross-entropy, backward, step, zero-grad, no synchronization inside the loop.
func BenchmarkTrainStep(b *testing.B) {
	devs := []string{"cpu", "cuda"}
	if v := os.Getenv("TORCHLEAN_BENCH_DEVICES"); v != "" {
		devs = strings.Split(v, ",")
	}
	for _, dev := range devs {
		d, err := ops.Open(dev)
		if err != nil {
			continue
		}
		b.Run("mlp_784_512_512_10_b128_adamw/"+dev, func(b *testing.B) {
			s := autograd.NewSession(autograd.Options{Device: d, Seed: 7})
			defer s.Close()
			m := newMLP(s, 784, 512, 512, 10)
			opt := autograd.NewAdamW(s.Params(), autograd.DefaultAdamW())
			xs, labels := trainData(128, 784, 10)
			xb, err := ops.FromFloat32(d, xs)
			if err != nil {
				b.Fatal(err)
			}
			defer xb.Release()
			step := func() {
				s.Reset()
				s.Backward(m.loss(s, s.Const(xb, []int{128, 784}), labels))
				opt.Step()
				opt.ZeroGrad()
			}
			for range 5 {
				step()
			}
			if err := d.Sync(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				step()
			}
			if err := d.Sync(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := s.Err(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
