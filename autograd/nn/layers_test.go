package nn_test

import (
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// TestLayerArgumentErrors: RMSNorm and Embedding fail where PyTorch's raise, naming the layer:
// an input whose last axis is not the norm's (a last axis of 1 would otherwise broadcast), and
// negative sizes.
func TestLayerArgumentErrors(t *testing.T) {
	checkSessionErrors(t, []sessionCase{
		{"rmsnorm last axis 1", func(s *autograd.Session) {
			nn.NewRMSNorm(s, 5).Forward(s.Input(make([]float32, 2), 2, 1))
		}, "nn: RMSNorm(5): input of shape [2 1]: want a last axis of 5"},
		{"rmsnorm last axis 4", func(s *autograd.Session) {
			nn.NewRMSNorm(s, 5).Forward(s.Input(make([]float32, 8), 2, 4))
		}, "nn: RMSNorm(5): input of shape [2 4]"},
		{"rmsnorm dim 0", func(s *autograd.Session) { nn.NewRMSNorm(s, 0) }, "nn: RMSNorm: dim 0 must be positive"},
		{"embedding negative", func(s *autograd.Session) { nn.NewEmbedding(s, -1, 3) }, "nn: Embedding: num_embeddings -1 and embedding_dim 3 must not be negative"},
		{"rmsnorm fits", func(s *autograd.Session) {
			nn.NewRMSNorm(s, 4).Forward(s.Input(make([]float32, 8), 2, 4))
		}, ""},
	})
}

// TestEmbeddingPadded: nn.Embedding(5, 3, padding_idx=-2): the padding row starts at zeros, its
// lookups give that row, and a backward pass leaves its gradient at zero while the other rows
// looked up accumulate theirs (row 1 twice; row 2 is not looked up).
func TestEmbeddingPadded(t *testing.T) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 3})
	defer s.Close()
	e := nn.NewEmbeddingPadded(s, 5, 3, -2)
	if !e.Padded || e.PaddingIdx != 3 {
		t.Fatalf("padding %v at %d, want row 3", e.Padded, e.PaddingIdx)
	}
	w, err := e.Weight.Host()
	if err != nil {
		t.Fatal(err)
	}
	if w[9] != 0 || w[10] != 0 || w[11] != 0 || w[0] == 0 {
		t.Fatalf("weight %v: want row 3 zero and the others drawn", w)
	}
	y := e.Forward([]int{1, 3, 1, 0}, 2, 2)
	v, err := s.Value(y).Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if v[3] != 0 || v[4] != 0 || v[5] != 0 || v[0] != w[3] {
		t.Errorf("lookups %v: want row 1, zeros, row 1, row 0", v)
	}
	s.Backward(s.Add(s.Sum(s.Mul(y, y)), s.Sum(y))) // dL/dy = 2y + 1: nonzero at the padding rows too
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	g, err := e.Weight.Grad().Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for j := range 3 {
		if g[9+j] != 0 || g[6+j] != 0 || g[3+j] != 2*(2*w[3+j]+1) || g[j] != 2*w[j]+1 {
			t.Fatalf("gradient %v: want rows 3 and 2 zero, row 1 2·(2w+1), row 0 2w+1", g)
		}
	}
	nn.NewEmbeddingPadded(s, 5, 3, -7)
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "padding_idx -7 is outside [-5, 5)") {
		t.Errorf("padding_idx -7: error %v", err)
	}
}

// A sessionCase runs layer calls on a fresh CPU session; want is a part of the session's error
// it must leave ("": none).
type sessionCase struct {
	name string
	run  func(s *autograd.Session)
	want string
}

// checkSessionErrors runs each case on its own session and checks the session's error.
func checkSessionErrors(t *testing.T, cases []sessionCase) {
	t.Helper()
	for _, c := range cases {
		s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
		c.run(s)
		err := s.Err()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		s.Close()
	}
}
