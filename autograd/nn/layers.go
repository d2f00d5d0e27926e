package nn

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/torchlean-go/torchlean/autograd"
)

// Linear is nn.Linear: y = x·Wᵀ + b for x of shape (..., In), W (Out, In), b (Out).
type Linear struct {
	Base
	s       *autograd.Session
	In, Out int
	Weight  *autograd.Param
	Bias    *autograd.Param // nil without a bias
}

// NewLinear returns a Linear layer of s with PyTorch's initialization: W and b drawn from
// U(-1/sqrt(In), 1/sqrt(In)) (kaiming_uniform_ with a = sqrt(5)), W first. bias false leaves the
// bias out (nn.Linear(bias=False)).
func NewLinear(s *autograd.Session, in, out int, bias bool) *Linear {
	id := lastID.Add(1)
	l := &Linear{s: s, In: in, Out: out}
	l.Weight = s.Param(sessionName("Linear", "weight", id), []int{out, in}, nil)
	l.RegisterParameter("weight", l.Weight)
	KaimingUniform(math.Sqrt(5), FanIn, "leaky_relu").Apply(s, l.Weight)
	if bias {
		l.Bias = s.Param(sessionName("Linear", "bias", id), []int{out}, nil)
		l.RegisterParameter("bias", l.Bias)
		if in > 0 {
			bound := 1 / math.Sqrt(float64(in))
			Uniform(-bound, bound).Apply(s, l.Bias)
		}
	}
	return l
}

// Forward returns x·Wᵀ + b (autograd's Tape.Linear).
func (l *Linear) Forward(x autograd.Var) autograd.Var {
	var b autograd.Var
	if l.Bias != nil {
		b = l.s.Use(l.Bias)
	}
	return l.s.Linear(x, l.s.Use(l.Weight), b)
}

// Embedding is nn.Embedding: a table of Num vectors of Dim values, looked up by index. With
// Padded (NewEmbeddingPadded), row PaddingIdx is PyTorch's padding_idx: it starts at zeros and
// its lookups pass no gradient to it.
type Embedding struct {
	Base
	s          *autograd.Session
	Num, Dim   int
	Weight     *autograd.Param
	Padded     bool
	PaddingIdx int
}

// NewEmbedding returns an embedding table of s drawn from N(0, 1), PyTorch's default.
func NewEmbedding(s *autograd.Session, num, dim int) *Embedding {
	e := &Embedding{s: s, Num: num, Dim: dim}
	if num < 0 || dim < 0 {
		s.Fail(fmt.Errorf("nn: Embedding: num_embeddings %d and embedding_dim %d must not be negative", num, dim))
	}
	e.Weight = s.Param(sessionName("Embedding", "weight", lastID.Add(1)), []int{num, dim}, nil)
	e.RegisterParameter("weight", e.Weight)
	Normal(0, 1).Apply(s, e.Weight)
	return e
}

// NewEmbeddingPadded returns nn.Embedding(num, dim, padding_idx=paddingIdx) of s (a negative
// paddingIdx counts from the end, as in PyTorch): NewEmbedding's table with the padding row set
// to zeros, and lookups of it that pass no gradient to it (a padding token's vector stays what
// it is while the others train).
func NewEmbeddingPadded(s *autograd.Session, num, dim, paddingIdx int) *Embedding {
	e := NewEmbedding(s, num, dim)
	if paddingIdx < -num || paddingIdx >= num {
		s.Fail(fmt.Errorf("nn: Embedding: padding_idx %d is outside [-%d, %d)", paddingIdx, num, num))
		return e
	}
	if paddingIdx < 0 {
		paddingIdx += num
	}
	e.Padded, e.PaddingIdx = true, paddingIdx
	if s.Err() != nil {
		return e
	}
	v, err := e.Weight.Host()
	if err == nil {
		clear(v[paddingIdx*dim : (paddingIdx+1)*dim])
		err = e.Weight.Set(v)
	}
	if err != nil {
		s.Fail(fmt.Errorf("nn: Embedding: padding row: %w", err))
	}
	return e
}

// Forward returns the rows ids of the table with the shape shape + (Dim): shape is the ids'
// batch shape (none means (len(ids))), e.g. Forward(tokens, batch, seqLen) gives (batch, seqLen,
// Dim). An id outside [0, Num) is the session's error, as PyTorch raises.
func (e *Embedding) Forward(ids []int, shape ...int) autograd.Var {
	if len(shape) == 0 {
		shape = []int{len(ids)}
	}
	if numel(shape) != len(ids) {
		e.s.Fail(fmt.Errorf("nn: embedding: %d ids for the shape %v", len(ids), shape))
		return autograd.Var{}
	}
	for _, id := range ids {
		if id < 0 || id >= e.Num {
			e.s.Fail(fmt.Errorf("nn: embedding: id %d is outside [0, %d)", id, e.Num))
			return autograd.Var{}
		}
	}
	w := e.s.Use(e.Weight)
	rows := e.s.Gather(w, ids)
	if e.Padded && slices.Contains(ids, e.PaddingIdx) {
		// The padding lookups read a detached copy: Where passes their gradient nowhere.
		keep := make([]float32, len(ids))
		for i, id := range ids {
			if id != e.PaddingIdx {
				keep[i] = 1
			}
		}
		rows = e.s.Where(e.s.Input(keep, len(ids), 1), rows, e.s.Gather(e.s.Detach(w), ids))
	}
	return e.s.Reshape(rows, append(shape, e.Dim)...)
}

// LayerNorm is nn.LayerNorm over the last axis of Dim values, with a weight (ones) and a bias
// (zeros) of Dim elements: (x - mean)/sqrt(var + Eps)·weight + bias, the biased variance.
type LayerNorm struct {
	Base
	s            *autograd.Session
	Dim          int
	Eps          float64 // PyTorch's default 1e-5
	Weight, Bias *autograd.Param
}

// NewLayerNorm returns a layer norm of s over a last axis of dim values.
func NewLayerNorm(s *autograd.Session, dim int) *LayerNorm {
	id := lastID.Add(1)
	l := &LayerNorm{s: s, Dim: dim, Eps: 1e-5}
	l.Weight = s.Param(sessionName("LayerNorm", "weight", id), []int{dim}, nil)
	l.Bias = s.Param(sessionName("LayerNorm", "bias", id), []int{dim}, nil)
	Ones().Apply(s, l.Weight)
	l.RegisterParameter("weight", l.Weight)
	l.RegisterParameter("bias", l.Bias)
	return l
}

// Forward normalizes each row of x (..., Dim) with the fused layer-norm kernels
// (Tape.LayerNormEps).
func (l *LayerNorm) Forward(x autograd.Var) autograd.Var {
	return l.s.LayerNormEps(x, l.s.Use(l.Weight), l.s.Use(l.Bias), l.Eps)
}

// RMSNorm is nn.RMSNorm over the last axis of Dim values: x / sqrt(mean(x²) + Eps) · weight, the
// weight ones.
type RMSNorm struct {
	Base
	s      *autograd.Session
	Dim    int
	Eps    float64 // PyTorch's default: float32's machine epsilon, 2^-23
	Weight *autograd.Param
}

// NewRMSNorm returns an RMS norm of s over a last axis of dim values.
func NewRMSNorm(s *autograd.Session, dim int) *RMSNorm {
	l := &RMSNorm{s: s, Dim: dim, Eps: 0x1p-23}
	if dim < 1 {
		s.Fail(fmt.Errorf("nn: RMSNorm: dim %d must be positive", dim))
	}
	l.Weight = s.Param(sessionName("RMSNorm", "weight", lastID.Add(1)), []int{dim}, nil)
	Ones().Apply(s, l.Weight)
	l.RegisterParameter("weight", l.Weight)
	return l
}

// Forward returns x / sqrt(mean(x·x, -1) + Eps) · weight, each step one recorded op (Mul,
// ReduceMean, AddScalar, Sqrt, Div, Mul), so its arithmetic is those kernels' on every device.
//
// An x whose last axis is not Dim fails the session (the weight would otherwise broadcast over
// a last axis of 1, where PyTorch raises).
func (l *RMSNorm) Forward(x autograd.Var) autograd.Var {
	s := l.s
	if sh := s.Shape(x); x.Valid() && (len(sh) == 0 || sh[len(sh)-1] != l.Dim) {
		s.Fail(fmt.Errorf("nn: RMSNorm(%d): input of shape %v: want a last axis of %d", l.Dim, sh, l.Dim))
		return autograd.Var{}
	}
	ms := s.Unsqueeze(s.ReduceMean(s.Mul(x, x), -1), -1)
	return s.Mul(s.Div(x, s.Sqrt(s.AddScalar(ms, l.Eps))), s.Use(l.Weight))
}

// GroupNorm is nn.GroupNorm: the Channels channels of x (N, C, ...) split into Groups groups,
// each (sample, group) normalized over its channels and positions with the biased variance,
// then a per-channel weight (ones) and bias (zeros).
type GroupNorm struct {
	Base
	s                *autograd.Session
	Groups, Channels int
	Eps              float64 // PyTorch's default 1e-5
	Weight, Bias     *autograd.Param
}

// NewGroupNorm returns a group norm of s; channels must be a multiple of groups (else the
// session's error).
func NewGroupNorm(s *autograd.Session, groups, channels int) *GroupNorm {
	id := lastID.Add(1)
	g := &GroupNorm{s: s, Groups: groups, Channels: channels, Eps: 1e-5}
	if groups < 1 || channels%groups != 0 {
		s.Fail(fmt.Errorf("nn: group norm: %d channels do not split into %d groups", channels, groups))
	}
	g.Weight = s.Param(sessionName("GroupNorm", "weight", id), []int{channels}, nil)
	g.Bias = s.Param(sessionName("GroupNorm", "bias", id), []int{channels}, nil)
	Ones().Apply(s, g.Weight)
	g.RegisterParameter("weight", g.Weight)
	g.RegisterParameter("bias", g.Bias)
	return g
}

// Forward normalizes x of shape (N, C, ...): y = (x - mean)/sqrt(var + Eps) per (sample,
// group), from recorded ops (ReduceMean, Sub, Mul, AddScalar, Sqrt, Div), then ·weight + bias
// per channel.
func (g *GroupNorm) Forward(x autograd.Var) autograd.Var {
	s := g.s
	shape := s.Shape(x)
	if shape == nil {
		return autograd.Var{}
	}
	if len(shape) < 2 || shape[1] != g.Channels {
		s.Fail(fmt.Errorf("nn: group norm: input of shape %v for %d channels (want (N, %d, ...))", shape, g.Channels, g.Channels))
		return autograd.Var{}
	}
	grouped := s.Reshape(x, shape[0], g.Groups, numel(shape[1:])/g.Groups)
	mean := s.Unsqueeze(s.ReduceMean(grouped, -1), -1)
	d := s.Sub(grouped, mean)
	v := s.Unsqueeze(s.ReduceMean(s.Mul(d, d), -1), -1)
	y := s.Reshape(s.Div(d, s.Sqrt(s.AddScalar(v, g.Eps))), shape...)
	affine := make([]int, len(shape)-1) // (C, 1, ..., 1): broadcast over N and the positions
	for i := range affine {
		affine[i] = 1
	}
	affine[0] = g.Channels
	return s.Add(s.Mul(y, s.Reshape(s.Use(g.Weight), affine...)), s.Reshape(s.Use(g.Bias), affine...))
}

// BatchNorm is nn.BatchNorm1d/2d/3d over the channels (dim 1) of x (N, C, ...): autograd's
// BatchNorm, with its running statistics as buffers (keys "running_mean", "running_var",
// "num_batches_tracked") and its mode from the module's (Train, Eval).
type BatchNorm struct {
	Base
	s  *autograd.Session
	BN *autograd.BatchNorm // Momentum and Eps are its fields
}

// NewBatchNorm returns a batch norm of s over channels channels with PyTorch's defaults.
func NewBatchNorm(s *autograd.Session, channels int) *BatchNorm {
	bn := s.NewBatchNorm(fmt.Sprintf("BatchNorm#%d", lastID.Add(1)), channels)
	b := &BatchNorm{s: s, BN: bn}
	b.RegisterParameter("weight", bn.Weight)
	b.RegisterParameter("bias", bn.Bias)
	b.RegisterBuffer("running_mean", bn.RunningMean)
	b.RegisterBuffer("running_var", bn.RunningVar)
	b.RegisterBuffer("num_batches_tracked", bn.NumBatchesTracked)
	return b
}

// Forward normalizes x with the batch's statistics in training mode (updating the running ones)
// and with the running statistics in evaluation mode.
func (b *BatchNorm) Forward(x autograd.Var) autograd.Var {
	return b.s.BatchNorm(b.BN, x, b.Training())
}

// Dropout is nn.Dropout: in training mode each element is zeroed with probability P and the
// others scaled by 1/(1-P), with a mask keyed by the session's generator; in evaluation mode
// the input passes through.
type Dropout struct {
	Base
	P float64
}

// NewDropout returns a dropout layer of probability p (PyTorch's default 0.5).
func NewDropout(p float64) *Dropout { return &Dropout{P: p} }

// Forward applies the dropout (Session.Dropout) in training mode and returns x in evaluation
// mode. x must belong to a session (its random draws).
func (d *Dropout) Forward(x autograd.Var) autograd.Var {
	if !d.Training() || !x.Valid() {
		return x
	}
	s := x.Tape().Session()
	if s == nil {
		x.Tape().Fail(fmt.Errorf("nn: dropout: the value belongs to a tape without a session (no random generator)"))
		return autograd.Var{}
	}
	return s.Dropout(x, d.P)
}

// fn is a layer without parameters that applies f on x's tape.
type fn struct {
	Base
	f func(t *autograd.Tape, x autograd.Var) autograd.Var
}

func (l *fn) Forward(x autograd.Var) autograd.Var {
	if !x.Valid() {
		return x
	}
	return l.f(x.Tape(), x)
}

// Func returns a layer without parameters applying f (nn.ReLU and friends are Func layers), for
// a Sequential.
func Func(f func(t *autograd.Tape, x autograd.Var) autograd.Var) Layer { return &fn{f: f} }

// ReLU returns nn.ReLU's layer.
func ReLU() Layer { return Func((*autograd.Tape).Relu) }

// GELU returns nn.GELU's layer (the exact, erf form, as Tape.Gelu).
func GELU() Layer { return Func((*autograd.Tape).Gelu) }

// Tanh returns nn.Tanh's layer.
func Tanh() Layer { return Func((*autograd.Tape).Tanh) }

// Sigmoid returns nn.Sigmoid's layer.
func Sigmoid() Layer { return Func((*autograd.Tape).Sigmoid) }

// Flatten returns nn.Flatten's layer: (N, d1, d2, ...) to (N, d1·d2·...).
func Flatten() Layer {
	return Func(func(t *autograd.Tape, x autograd.Var) autograd.Var {
		shape := t.Shape(x)
		if len(shape) < 2 {
			return x
		}
		return t.Reshape(x, shape[0], numel(shape[1:]))
	})
}

// Sequential is nn.Sequential: layers applied in turn, registered as "0", "1", ...
type Sequential struct {
	Base
	Layers []Layer
}

// NewSequential returns the chain of layers.
func NewSequential(layers ...Layer) *Sequential {
	q := &Sequential{}
	for _, l := range layers {
		q.Append(l)
	}
	return q
}

// Append adds l at the end of the chain, registered under the next index.
func (q *Sequential) Append(l Layer) {
	q.RegisterModule(strconv.Itoa(len(q.Layers)), l)
	q.Layers = append(q.Layers, l)
}

// Forward applies the layers in turn.
func (q *Sequential) Forward(x autograd.Var) autograd.Var {
	for _, l := range q.Layers {
		x = l.Forward(x)
	}
	return x
}

// MLPOptions configure NewMLP.
type MLPOptions struct {
	// Activation makes the layer after each hidden Linear (nil: ReLU).
	Activation func() Layer
	// Dropout, when positive, adds a Dropout of that probability after each activation.
	Dropout float64
	// NoBias leaves the Linear layers without biases.
	NoBias bool
}

// NewMLP returns a multilayer perceptron of s with the given widths (input first, output last)
// as a Sequential of Linear layers with an activation (and a Dropout, when asked) between them
// and none after the last: the keys of PyTorch's nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
// nn.Linear(256, 10)) for sizes [784, 256, 10] ("0.weight", "0.bias", "2.weight", "2.bias").
func NewMLP(s *autograd.Session, sizes []int, o MLPOptions) *Sequential {
	if len(sizes) < 2 {
		s.Fail(fmt.Errorf("nn: mlp: %d sizes (want the input and output widths at least)", len(sizes)))
	}
	act := o.Activation
	if act == nil {
		act = ReLU
	}
	q := NewSequential()
	for i := 1; i < len(sizes); i++ {
		q.Append(NewLinear(s, sizes[i-1], sizes[i], !o.NoBias))
		if i < len(sizes)-1 {
			q.Append(act())
			if o.Dropout > 0 {
				q.Append(NewDropout(o.Dropout))
			}
		}
	}
	return q
}
