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
	for _, c := range []struct {
		name string
		run  func(s *autograd.Session)
		want string
	}{
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
	} {
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
