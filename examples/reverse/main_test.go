package main

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep/graphtest"
	"github.com/torchlean-go/torchlean/internal/testenv"
	"github.com/torchlean-go/torchlean/ops"
)

// TestReverse trains the transformer for 150 steps: it must learn the task, leave no buffer
// behind, and, in deterministic mode, end with the same bits on a GPU as on the CPU.
func TestReverse(t *testing.T) {
	old := ops.Deterministic()
	ops.SetDeterministic(true) // the embeddings' backward scatter-adds in a fixed order
	defer ops.SetDeterministic(old)
	run := func(t *testing.T, d *ops.Device) map[string][]float32 {
		base := d.Stats().LiveBytes
		m, acc, err := train(d, 150, 32, 3e-3, 1, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		s := m.s
		if acc < 0.95 {
			t.Errorf("%s: token accuracy %.3f after 150 steps, want >= 0.95", d, acc)
		}
		params := map[string][]float32{}
		for _, np := range nn.NamedState(m) {
			if params[np.Key], err = np.Param.Host(); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		if got := d.Stats().LiveBytes; got != base {
			t.Errorf("%s: live bytes %d after Close, %d before", d, got, base)
		}
		return params
	}
	var want map[string][]float32
	t.Run("cpu", func(t *testing.T) {
		want = run(t, ops.CPU())
		if h := paramsHash(want); h != wantHash {
			t.Errorf("parameters hash to %016x, want %016x (every machine, CPU kernel set and GPU gives these bits; a deliberate change of arithmetic updates wantHash)", h, wantHash)
		}
	})
	t.Run("cuda", func(t *testing.T) {
		d, err := ops.Open("cuda")
		testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
		if want == nil {
			t.Fatal("no CPU run to compare with")
		}
		got := run(t, d)
		for name, w := range want {
			if len(got[name]) != len(w) {
				t.Fatalf("%s: %d values on %s, %d on the CPU", name, len(got[name]), d, len(w))
			}
			for i := range w {
				if math.Float32bits(got[name][i]) != math.Float32bits(w[i]) {
					t.Fatalf("%s[%d] = %v on %s, %v on the CPU", name, i, got[name][i], d, w[i])
				}
			}
		}
	})
}

// wantHash is paramsHash of the parameters after TestReverse's training.
const wantHash uint64 = 0x0f04e5d4b1776e2d

// paramsHash returns the FNV-1a hash of the parameters' bits, in name order.
func paramsHash(params map[string][]float32) uint64 {
	h := fnv.New64a()
	for _, name := range slices.Sorted(maps.Keys(params)) {
		h.Write([]byte(name))
		for _, v := range params[name] {
			binary.Write(h, binary.LittleEndian, math.Float32bits(v))
		}
	}
	return h.Sum64()
}

// graphParams trains 40 steps on d in mode md and returns the parameters' bits and the log.
func graphParams(t *testing.T, d *ops.Device, md mode) ([]uint32, string) {
	t.Helper()
	var log strings.Builder
	base := d.Stats().LiveBytes
	m, _, err := trainMode(d, 40, 16, 3e-3, 2, &log, md)
	if err != nil {
		t.Fatal(err)
	}
	bits := graphtest.ParamBits(t, nn.Parameters(m))
	m.s.Close()
	if got := d.Stats().LiveBytes; got != base {
		t.Errorf("%s, mode %+v: live bytes %d after Close, %d before", d, md, got, base)
	}
	return bits, log.String()
}

// TestGraphSteps: -graph (static inputs refilled between steps, the device clipping, the step
// offered to the capture: on the CPU it runs eagerly, with a schedule changing the learning rate
// every step) gives the parameters and the losses of an eager run that clips on the device bit
// for bit; that clipping is not ClipGradNorm's, so the parameters differ from the plain eager
// run's in the last bits.
func TestGraphSteps(t *testing.T) {
	want, wantLog := graphParams(t, ops.CPU(), mode{deviceClip: true})
	got, gotLog := graphParams(t, ops.CPU(), mode{graph: true})
	if !slices.Equal(got, want) || gotLog != wantLog {
		t.Errorf("-graph changed the training: same parameters %v; log\n%s\nwant\n%s", slices.Equal(got, want), gotLog, wantLog)
	}
	if plain, _ := graphParams(t, ops.CPU(), mode{}); slices.Equal(plain, want) {
		t.Error("the device clipping gave ClipGradNorm's bits: the test does not tell the clippings apart")
	}
}

// TestGPUGraph (GPU): the step is captured, and its replays give the bits of eager steps that
// clip on the device (deterministic mode).
func TestGPUGraph(t *testing.T) {
	d := graphtest.CUDA(t, true)
	want, _ := graphParams(t, d, mode{deviceClip: true})
	got, log := graphParams(t, d, mode{graph: true})
	if !slices.Equal(got, want) {
		t.Error("-graph's replays changed the parameters")
	}
	graphtest.CheckCaptured(t, log)
}
