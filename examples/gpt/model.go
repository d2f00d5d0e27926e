package main

import (
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// config is the shape of the model.
type config struct {
	Vocab  int `json:"vocab"`  // characters
	Seq    int `json:"seq"`    // context length: the positions the model has embeddings for
	Width  int `json:"width"`  // d, the width of the residual stream
	Heads  int `json:"heads"`  // attention heads; each has d/heads channels
	Layers int `json:"layers"` // transformer blocks
}

// check returns an error unless the shape makes a model.
func (c config) check() error {
	switch {
	case c.Vocab < 1 || c.Seq < 1 || c.Width < 1 || c.Heads < 1 || c.Layers < 1:
		return fmt.Errorf("gpt: -seq, -d, -heads and -layers must be positive")
	case c.Width%c.Heads != 0:
		return fmt.Errorf("gpt: -d %d does not split into %d heads", c.Width, c.Heads)
	case c.Width/c.Heads > ops.AttentionMaxD:
		return fmt.Errorf("gpt: heads of %d channels (-d %d / -heads %d); the attention takes at most %d", c.Width/c.Heads, c.Width, c.Heads, ops.AttentionMaxD)
	}
	return nil
}

// initStd is the standard deviation of the weights at initialization (GPT-2's 0.02); the
// projections that write into the residual stream get initStd/sqrt(2·layers), so that the
// stream's variance at initialization does not grow with the depth.
const initStd = 0.02

// attention is causal multi-head self-attention: q, k and v projections of the input (batch, T,
// d), each split into heads (batch, heads, T, d/heads), attention over the keys j <= i on the
// flash kernels (Tape.ScaledDotProductAttention with Causal), the heads concatenated back and
// projected. Keys q_proj, k_proj, v_proj, out_proj.
type attention struct {
	nn.Base
	s            *autograd.Session
	heads        int
	q, k, v, out *nn.Linear
}

func newAttention(s *autograd.Session, c config) *attention {
	a := &attention{s: s, heads: c.Heads}
	a.q = linear(s, c.Width, c.Width, initStd)
	a.k = linear(s, c.Width, c.Width, initStd)
	a.v = linear(s, c.Width, c.Width, initStd)
	a.out = linear(s, c.Width, c.Width, initStd/math.Sqrt(float64(2*c.Layers)))
	a.RegisterModule("q_proj", a.q)
	a.RegisterModule("k_proj", a.k)
	a.RegisterModule("v_proj", a.v)
	a.RegisterModule("out_proj", a.out)
	return a
}

// Forward maps x (batch, T, d) to the attention's output of the same shape.
func (a *attention) Forward(x autograd.Var) autograd.Var {
	s := a.s
	shape := s.Shape(x)
	if len(shape) != 3 {
		s.Fail(fmt.Errorf("gpt: attention input of shape %v (want (batch, T, d))", shape))
		return autograd.Var{}
	}
	b, t, d := shape[0], shape[1], shape[2]
	split := func(l *nn.Linear) autograd.Var { // (b, t, d) -> (b, heads, t, d/heads)
		return s.Permute(s.Reshape(l.Forward(x), b, t, a.heads, d/a.heads), 0, 2, 1, 3)
	}
	y := s.ScaledDotProductAttention(split(a.q), split(a.k), split(a.v), autograd.SDPAOptions{Causal: true})
	return a.out.Forward(s.Reshape(s.Permute(y, 0, 2, 1, 3), b, t, d))
}

// block is a pre-norm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x)) with the MLP
// Linear(d, 4d), GELU (the tanh form), Linear(4d, d). Keys ln_1, attn, ln_2, mlp.fc, mlp.proj.
type block struct {
	nn.Base
	s        *autograd.Session
	ln1, ln2 *nn.LayerNorm
	attn     *attention
	mlp      *nn.Sequential
}

func newBlock(s *autograd.Session, c config) *block {
	b := &block{s: s, ln1: nn.NewLayerNorm(s, c.Width), attn: newAttention(s, c), ln2: nn.NewLayerNorm(s, c.Width)}
	b.mlp = nn.NewSequential(linear(s, c.Width, 4*c.Width, initStd), nn.GELU(),
		linear(s, 4*c.Width, c.Width, initStd/math.Sqrt(float64(2*c.Layers))))
	b.RegisterModule("ln_1", b.ln1)
	b.RegisterModule("attn", b.attn)
	b.RegisterModule("ln_2", b.ln2)
	b.RegisterModule("mlp", b.mlp)
	return b
}

// Forward maps the residual stream x (batch, T, d) to the next one.
func (b *block) Forward(x autograd.Var) autograd.Var {
	x = b.s.Add(x, b.attn.Forward(b.ln1.Forward(x)))
	return b.s.Add(x, b.mlp.Forward(b.ln2.Forward(x)))
}

// gpt is the language model: token and position embeddings (keys wte, wpe), the blocks (h.0,
// h.1, ...), a final LayerNorm (ln_f) and the head (lm_head, no bias) giving the logits of the
// next character at every position.
type gpt struct {
	nn.Base
	s        *autograd.Session
	cfg      config
	wte, wpe *nn.Embedding
	blocks   *nn.Sequential
	lnf      *nn.LayerNorm
	head     *nn.Linear
}

// newGPT returns a model of s of the shape c (checked by the caller), initialized as GPT-2:
// weights and embeddings from N(0, 0.02²) (the residual projections' scaled down with the
// depth), biases 0, LayerNorms 1 and 0.
func newGPT(s *autograd.Session, c config) *gpt {
	m := &gpt{s: s, cfg: c, wte: nn.NewEmbedding(s, c.Vocab, c.Width), wpe: nn.NewEmbedding(s, c.Seq, c.Width)}
	nn.Normal(0, initStd).Apply(s, m.wte.Weight)
	nn.Normal(0, initStd).Apply(s, m.wpe.Weight)
	m.blocks = nn.NewSequential()
	for range c.Layers {
		m.blocks.Append(newBlock(s, c))
	}
	m.lnf = nn.NewLayerNorm(s, c.Width)
	m.head = nn.NewLinear(s, c.Width, c.Vocab, false)
	nn.Normal(0, initStd).Apply(s, m.head.Weight)
	m.RegisterModule("wte", m.wte)
	m.RegisterModule("wpe", m.wpe)
	m.RegisterModule("h", m.blocks)
	m.RegisterModule("ln_f", m.lnf)
	m.RegisterModule("lm_head", m.head)
	return m
}

// linear returns a Linear(in, out) with a bias, its weight from N(0, std²) and its bias 0.
func linear(s *autograd.Session, in, out int, std float64) *nn.Linear {
	l := nn.NewLinear(s, in, out, true)
	nn.Normal(0, std).Apply(s, l.Weight)
	nn.Zeros().Apply(s, l.Bias)
	return l
}

// logits records the forward pass of batch sequences of t tokens each (row-major, batch·t ids,
// t <= cfg.Seq) and returns the logits of the next character at every position, (batch, t,
// vocab).
func (m *gpt) logits(tokens []int, batch, t int) autograd.Var {
	if t > m.cfg.Seq {
		m.s.Fail(fmt.Errorf("gpt: %d positions for a model of context %d", t, m.cfg.Seq))
		return autograd.Var{}
	}
	positions := make([]int, t)
	for i := range positions {
		positions[i] = i
	}
	h := m.s.Add(m.wte.Forward(tokens, batch, t), m.wpe.Forward(positions, t)) // (batch, t, d) + (t, d)
	return m.head.Forward(m.lnf.Forward(m.blocks.Forward(h)))
}

// logitsIdx is logits with the tokens (batch·t) and the positions 0 .. t-1 prepared on the
// device, as a captured step reads them: Embedding.Forward's ops through GatherIdx, the same
// bits.
func (m *gpt) logitsIdx(tokens, positions *ops.Indices, batch, t int) autograd.Var {
	s := m.s
	if t > m.cfg.Seq {
		s.Fail(fmt.Errorf("gpt: %d positions for a model of context %d", t, m.cfg.Seq))
		return autograd.Var{}
	}
	tok := s.Reshape(s.GatherIdx(s.Use(m.wte.Weight), tokens), batch, t, m.wte.Dim)
	pos := s.Reshape(s.GatherIdx(s.Use(m.wpe.Weight), positions), t, m.wpe.Dim)
	return m.head.Forward(m.lnf.Forward(m.blocks.Forward(s.Add(tok, pos))))
}
