package main

import (
	"fmt"
	"math"
	"testing"

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
		s, acc, err := train(d, 150, 32, 3e-3, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if acc < 0.95 {
			t.Errorf("%s: token accuracy %.3f after 150 steps, want >= 0.95", d, acc)
		}
		params := map[string][]float32{}
		for _, p := range s.Params() {
			if params[p.Name()], err = p.Host(); err != nil {
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
	t.Run("cpu", func(t *testing.T) { want = run(t, ops.CPU()) })
	t.Run("cuda", func(t *testing.T) {
		d, err := ops.Open("cuda")
		testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
		got := run(t, d)
		for name, w := range want {
			for i := range w {
				if math.Float32bits(got[name][i]) != math.Float32bits(w[i]) {
					t.Fatalf("%s[%d] = %v on %s, %v on the CPU", name, i, got[name][i], d, w[i])
				}
			}
		}
	})
}
