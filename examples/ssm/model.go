package main

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// config is the model's shape.
type config struct {
	Vocab  int // characters
	D      int // width of the residual stream
	Inner  int // channels of a block's scan (Mamba's d_inner, 2·D by default)
	Layers int // blocks
	Conv   int // taps of the causal depthwise convolution
}

// check returns an error unless every size is positive.
func (c config) check() error {
	if c.Vocab < 1 || c.D < 1 || c.Inner < 1 || c.Layers < 1 || c.Conv < 1 {
		return fmt.Errorf("ssm: the model's sizes must be positive (d %d, inner %d, layers %d, conv %d)", c.D, c.Inner, c.Layers, c.Conv)
	}
	return nil
}

// paramID numbers the blocks, for their parameters' session names (a session's names must be
// unique; the keys users see are the module tree's).
var paramID atomic.Uint64

// block is a Mamba-style residual block with one state per channel: for x (T, batch, D),
//
//	h = RMSNorm(x)
//	u, z = split(in_proj(h))                          each (T, batch, Inner)
//	u = SiLU(causal depthwise conv of u, Conv taps)
//	Δ = softplus(dt_proj(u))                          the step size, per position and channel
//	a = exp(-Δ·exp(A_log))                            the transition, in (0, 1)
//	s[t] = a[t]·s[t-1] + Δ[t]·u[t], s[-1] = 0         Tape.SelectiveScanVar (b = Δ, x = u)
//	y = (s + D·u)·SiLU(z)
//	x + out_proj(y)
//
// Keys follow the Mamba reference code: norm.weight, in_proj.weight, conv1d.weight (Conv,
// Inner: tap j multiplies u[t-Conv+1+j], PyTorch's Conv1d weight (Inner, 1, Conv) transposed),
// conv1d.bias, dt_proj.weight, dt_proj.bias, A_log, D, out_proj.weight.
type block struct {
	nn.Base
	s            *autograd.Session
	conv         int
	norm         *nn.RMSNorm
	inProj       *nn.Linear
	convW, convB *autograd.Param
	dtProj       *nn.Linear
	aLog, dSkip  *autograd.Param
	outProj      *nn.Linear
	zeros        *zeroInputs // nil: zeros uploaded per step (Session.Input)
}

// paramSet is a module of bare parameters (the block's conv1d: weight and bias).
type paramSet struct{ nn.Base }

// timeMajor returns the rows of a (batch, T) row-major array in (T, batch) order.
func timeMajor(v []int, batch, T int) []int {
	out := make([]int, len(v))
	for i := range batch {
		for t := range T {
			out[t*batch+i] = v[i*T+t]
		}
	}
	return out
}

// newBlock returns a block of s. Initialization as Mamba's: PyTorch's defaults for the Linear
// layers and the convolution (U(±1/sqrt(Conv))), Δ's bias such that softplus(bias) is
// log-uniform in [1e-3, 1e-1], A = exp(A_log) spread from 1 to 16 over the channels (decays
// from slow to fast), D = 1; out_proj scaled by 1/sqrt(layers) so the residual stream starts
// near the embedding.
func newBlock(s *autograd.Session, c config) *block {
	id := paramID.Add(1)
	name := func(field string) string { return fmt.Sprintf("ssm.block#%d.%s", id, field) }
	b := &block{s: s, conv: c.Conv,
		norm:   nn.NewRMSNorm(s, c.D),
		inProj: nn.NewLinear(s, c.D, 2*c.Inner, false),
	}
	b.convW = s.Param(name("conv1d.weight"), []int{c.Conv, c.Inner}, nil)
	b.convB = s.Param(name("conv1d.bias"), []int{c.Inner}, nil)
	bound := 1 / math.Sqrt(float64(c.Conv))
	nn.Uniform(-bound, bound).Apply(s, b.convW)
	nn.Uniform(-bound, bound).Apply(s, b.convB)
	b.dtProj = nn.NewLinear(s, c.Inner, c.Inner, true)
	dtBias := make([]float32, c.Inner)
	aLog := make([]float32, c.Inner)
	dSkip := make([]float32, c.Inner)
	for j := range c.Inner {
		f := 0.5
		if c.Inner > 1 {
			f = float64(j) / float64(c.Inner-1)
		}
		// Δ at initialization, log-uniform over [1e-3, 1e-1] across the channels in an order
		// unlike A's (rank 7j mod Inner), so that slow and fast decays meet various step sizes.
		g := float64((j*7)%c.Inner) / float64(max(c.Inner-1, 1))
		dt := math.Exp(math.Log(1e-3) + g*(math.Log(1e-1)-math.Log(1e-3)))
		dtBias[j] = float32(dt + math.Log(-math.Expm1(-dt))) // softplus⁻¹(dt)
		aLog[j] = float32(math.Log(1 + 15*f))
		dSkip[j] = 1
	}
	b.dtProj.Bias.Set(dtBias)
	b.aLog = s.Param(name("A_log"), []int{c.Inner}, aLog)
	b.dSkip = s.Param(name("D"), []int{c.Inner}, dSkip)
	b.outProj = nn.NewLinear(s, c.Inner, c.D, false)
	if w, err := b.outProj.Weight.Host(); err == nil {
		k := float32(1 / math.Sqrt(float64(c.Layers)))
		for i := range w {
			w[i] *= k
		}
		b.outProj.Weight.Set(w)
	}
	b.RegisterModule("norm", b.norm)
	b.RegisterModule("in_proj", b.inProj)
	conv := &paramSet{}
	conv.RegisterParameter("weight", b.convW)
	conv.RegisterParameter("bias", b.convB)
	b.RegisterModule("conv1d", conv)
	b.RegisterModule("dt_proj", b.dtProj)
	b.RegisterParameter("A_log", b.aLog)
	b.RegisterParameter("D", b.dSkip)
	b.RegisterModule("out_proj", b.outProj)
	return b
}

// silu returns x·sigmoid(x).
func silu(s *autograd.Session, x autograd.Var) autograd.Var { return s.Mul(x, s.Sigmoid(x)) }

// Forward maps x (T, batch, D), time-major, to the same shape. The layout is time-major so that
// the convolution's shifts are slices along the leading axis and the scan reads (T, batch·Inner)
// as Tape.SelectiveScanVar's two-dimensional form, the batch folded into the channels (the scan
// treats every channel alike).
func (b *block) Forward(x autograd.Var) autograd.Var {
	s := b.s
	shape := s.Shape(x)
	if shape == nil {
		return autograd.Var{}
	}
	T, batch := shape[0], shape[1]
	inner := b.dtProj.In
	h := b.norm.Forward(x)
	w := s.Use(b.inProj.Weight) // (2·inner, D): u's rows, then z's
	u := s.Linear(h, s.Narrow(w, 0, 0, inner), autograd.Var{})
	z := s.Linear(h, s.Narrow(w, 0, inner, inner), autograd.Var{})
	u = silu(s, b.causalConv(u, T, batch, inner))
	dt := s.Softplus(b.dtProj.Forward(u))
	negA := s.Scale(s.Exp(s.Use(b.aLog)), -1)
	a := s.Exp(s.Mul(dt, negA))
	flat := []int{T, batch * inner}
	h0 := b.zeroState(batch, inner)
	y := s.SelectiveScanVar(s.Reshape(a, flat...), s.Reshape(dt, flat...), s.Reshape(u, flat...), h0)
	y = s.Add(s.Reshape(y, T, batch, inner), s.Mul(u, s.Use(b.dSkip)))
	y = s.Mul(y, silu(s, z))
	return s.Add(x, b.outProj.Forward(y))
}

// causalConv returns the depthwise causal convolution over time of u (T, batch, inner) with the
// block's taps: out[t] = bias + Σ_j w[j]·u[t-conv+1+j], u before t = 0 read as 0; built from Cat
// (the zero padding in front) and a slice along time per tap.
func (b *block) causalConv(u autograd.Var, T, batch, inner int) autograd.Var {
	s := b.s
	w := s.Use(b.convW)
	out := s.Use(b.convB)
	up := u
	if b.conv > 1 {
		up = s.Cat(0, b.zeroPad(batch, inner), u)
	}
	for j := range b.conv {
		out = s.Add(out, s.Mul(s.Narrow(up, 0, j, T), s.Reshape(s.Narrow(w, 0, j, 1), inner)))
	}
	return out
}

// zeroInputs are the blocks' zero initial state (batch·inner) and zero convolution padding
// (conv-1, batch, inner) for batches of batch sequences, made once as static inputs for a
// captured step (Session.Input would upload them inside the step). Zeros either way: the same
// bits as the uploads.
type zeroInputs struct {
	batch      int
	state, pad *autograd.StaticInput
}

// newZeroInputs makes the zero inputs of batches of batch sequences.
func newZeroInputs(s *autograd.Session, c config, batch int) (*zeroInputs, error) {
	z := &zeroInputs{batch: batch}
	var err error
	if z.state, err = s.NewStaticInput(batch * c.Inner); err == nil && c.Conv > 1 {
		z.pad, err = s.NewStaticInput(c.Conv-1, batch, c.Inner)
	}
	if err != nil {
		z.release()
		return nil, err
	}
	return z, nil
}

func (z *zeroInputs) release() {
	if z.state != nil {
		z.state.Release()
	}
	if z.pad != nil {
		z.pad.Release()
	}
}

// zeroState returns the zero initial state of the scan (batch·inner).
func (b *block) zeroState(batch, inner int) autograd.Var {
	if z := b.zeros; z != nil && z.batch == batch {
		return z.state.Var()
	}
	return b.s.Input(make([]float32, batch*inner), batch*inner)
}

// zeroPad returns the zero padding in front of the convolution's input (conv-1, batch, inner).
func (b *block) zeroPad(batch, inner int) autograd.Var {
	if z := b.zeros; z != nil && z.batch == batch {
		return z.pad.Var()
	}
	return b.s.Input(make([]float32, (b.conv-1)*batch*inner), b.conv-1, batch, inner)
}

// model is the language model: an embedding, the blocks, a final RMSNorm and a Linear head.
// Keys: embedding.weight, layers.N...., norm_f.weight, lm_head.weight.
type model struct {
	nn.Base
	s      *autograd.Session
	cfg    config
	embed  *nn.Embedding
	blocks []*block
	normF  *nn.RMSNorm
	head   *nn.Linear
}

// newModel returns a model of s.
func newModel(s *autograd.Session, c config) *model {
	m := &model{s: s, cfg: c, embed: nn.NewEmbedding(s, c.Vocab, c.D)}
	m.RegisterModule("embedding", m.embed)
	layers := nn.NewSequential()
	for range c.Layers {
		b := newBlock(s, c)
		m.blocks = append(m.blocks, b)
		layers.Append(b)
	}
	m.RegisterModule("layers", layers)
	m.normF = nn.NewRMSNorm(s, c.D)
	m.head = nn.NewLinear(s, c.D, c.Vocab, false)
	m.RegisterModule("norm_f", m.normF)
	m.RegisterModule("lm_head", m.head)
	return m
}

// logits records the forward pass of batch sequences of T tokens, time-major (tokens[t·batch + i]
// is token t of sequence i), and returns the logits (T, batch, Vocab).
func (m *model) logits(tokens []int, T, batch int) autograd.Var {
	return m.logitsOf(m.embed.Forward(tokens, T, batch))
}

// logitsIdx is logits with the tokens prepared on the device (Embedding.Forward's ops through
// GatherIdx), as a captured step reads them.
func (m *model) logitsIdx(tokens *ops.Indices, T, batch int) autograd.Var {
	s := m.s
	return m.logitsOf(s.Reshape(s.GatherIdx(s.Use(m.embed.Weight), tokens), T, batch, m.embed.Dim))
}

// logitsOf returns the logits of the embedded tokens x (T, batch, D).
func (m *model) logitsOf(x autograd.Var) autograd.Var {
	for _, b := range m.blocks {
		x = b.Forward(x)
	}
	return m.head.Forward(m.normF.Forward(x))
}
