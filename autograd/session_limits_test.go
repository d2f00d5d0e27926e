package autograd_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// TestSessionIndexChecks: on a session's tape a row index outside [0, dim 0) is an error naming
// the op, the index, its position and the bound, for host indices and for Ints handles; nothing
// is recorded and ClearErr goes on. A plain Tape keeps the seeds' totalization.
func TestSessionIndexChecks(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d})
		defer s.Close()
		x := func() autograd.Var { return s.Input([]float32{1, 2, 3, 4, 5, 6}, 3, 2) }
		for _, c := range []struct {
			name string
			f    func() autograd.Var
			want string
		}{
			{"gather", func() autograd.Var { return s.Gather(x(), []int{0, 3}) },
				"autograd: gather: index 3 at position 1 is outside [0, 3), dim 0 of shape [3 2]"},
			{"gather negative", func() autograd.Var { return s.Gather(x(), []int{-1}) },
				"autograd: gather: index -1 at position 0 is outside [0, 3)"},
			{"scatter_add", func() autograd.Var { return s.ScatterAdd(x(), s.Input([]float32{1, 1}, 1, 2), []int{7}) },
				"autograd: scatter_add: index 7 at position 0 is outside [0, 3)"},
			{"gather ints", func() autograd.Var { return s.GatherIdx(x(), s.Ints(2, 1, 5).Indices()) },
				"autograd: gather: index 5 at position 2 is outside [0, 3)"},
			{"scatter_add ints", func() autograd.Var {
				return s.ScatterAddIdx(x(), s.Input([]float32{1, 1}, 1, 2), s.Ints(3).Indices())
			}, "autograd: scatter_add: index 3 at position 0 is outside [0, 3)"},
			{"cross_entropy", func() autograd.Var { return s.CrossEntropy(x(), []int{0, 2, 1}) },
				"autograd: cross_entropy: label 2 at position 1 is outside [0, 2)"},
			{"nll_loss", func() autograd.Var { return s.NLLLoss(x(), []int{0, 1, 2}, autograd.NLLOptions{}) },
				"autograd: nll_loss: label 2 at position 2 is outside [0, 2)"},
		} {
			before := s.Len()
			v := c.f()
			err := s.ClearErr()
			if err == nil || !strings.Contains(err.Error(), c.want) || v.Valid() {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
			}
			if s.Len() != 0 || before != 0 {
				t.Errorf("%s: %d nodes after ClearErr (%d before)", c.name, s.Len(), before)
			}
		}
		// In range: the values PyTorch's index_select and index_add give.
		g := s.Gather(x(), []int{2, 0, 2})
		sc := s.ScatterAddIdx(x(), s.Input([]float32{10, 20, 30, 40}, 2, 2), s.Ints(0, 0).Indices())
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if got := values(t, s.Value(g)); !slices.Equal(got, []float64{5, 6, 1, 2, 5, 6}) {
			t.Errorf("gather: %v", got)
		}
		if got := values(t, s.Value(sc)); !slices.Equal(got, []float64{41, 62, 3, 4, 5, 6}) {
			t.Errorf("scatter_add: %v", got)
		}
		// A plain Tape reads zeros beyond dim 0 (the seeds' rule, documented on Gather).
		tp := autograd.NewTape(d)
		defer tp.Reset()
		b := upload(t, d, 1, 2, 3, 4)
		defer b.Release()
		y := tp.Gather(tp.Const(b, []int{2, 2}), []int{1, 2})
		if err := tp.Err(); err != nil {
			t.Fatal(err)
		}
		if got := values(t, tp.Value(y)); !slices.Equal(got, []float64{3, 4, 0, 0}) {
			t.Errorf("plain tape gather beyond dim 0: %v, want [3 4 0 0]", got)
		}
	})
}

// TestTapeNodeBound: a session whose loop forgets Reset fails at the op that crosses
// Options.MaxTapeNodes, with an error that says so, and leaks nothing; a loop that resets runs
// on; -1 lifts the bound; a plain Tape has none.
func TestTapeNodeBound(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d, MaxTapeNodes: 10})
		p := s.Param("p", []int{2}, []float32{1, 2})
		step := func() { s.Exp(s.Mul(s.Use(p), s.Input([]float32{3, 4}, 2))) } // 4 nodes
		step()
		step()
		if err := s.Err(); err != nil || s.Len() != 8 {
			t.Fatalf("two steps: %d nodes, error %v", s.Len(), err)
		}
		step() // use, input: 10 nodes; mul is the eleventh
		err := s.Err()
		if err == nil || !strings.Contains(err.Error(), "autograd: mul: the tape holds 10 nodes recorded since the last Reset") ||
			!strings.Contains(err.Error(), "misses a Reset") || s.Len() != 10 {
			t.Fatalf("third step: %d nodes, error %v", s.Len(), err)
		}
		s.ClearErr()
		for range 100 { // a loop that resets stays far below the bound
			s.Reset()
			step()
			s.Backward(s.Sum(s.Use(p)))
			s.ZeroGrad()
		}
		if err := s.Err(); err != nil {
			t.Errorf("a loop with Reset: %v", err)
		}
		s.Close()

		unbounded := autograd.NewSession(autograd.Options{Device: d, MaxTapeNodes: -1})
		defer unbounded.Close()
		for _, tp := range []*autograd.Tape{unbounded.Tape, autograd.NewTape(d)} {
			b := upload(t, d, 1)
			for range 3000 {
				tp.Const(b, []int{1})
			}
			if err := tp.Err(); err != nil || tp.Len() != 3000 {
				t.Errorf("no bound: %d nodes, error %v", tp.Len(), err)
			}
			tp.Reset()
			b.Release()
		}
	})
}

// A loop that forgets Reset: every step's values stay on the tape until the bound stops it (the
// default bound is DefaultMaxTapeNodes; 8 here).
func ExampleOptions_maxTapeNodes() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), MaxTapeNodes: 8})
	defer s.Close()
	for step := range 5 {
		// s.Reset() belongs here
		x := s.Input([]float32{1, 2}, 2)
		s.Sum(s.Tanh(x))
		if err := s.Err(); err != nil {
			fmt.Printf("step %d: %v\n", step, err)
			break
		}
	}
	// Output:
	// step 2: autograd: sum: the tape holds 8 nodes recorded since the last Reset, its bound (Options.MaxTapeNodes): the loop probably misses a Reset, which ends each step and releases its values; if one step really records more, raise MaxTapeNodes (-1: no bound)
}
