// Command reverse trains a one-layer causal transformer (pre-norm, single-head self-attention and
// a GELU MLP) to reverse a sequence of digits, on the CPU or a CUDA device: given x0 .. x3 SEP it
// predicts x3 x2 x1 x0, one token at a time. It is the PyTorch program
//
//	h = tok(x) + pos(arange(T))
//	a = ln1(h); s = q(a) @ k(a).transpose(-2, -1) / sqrt(D)
//	h = h + o(s.masked_fill(~causal, -inf).softmax(-1) @ v(a))
//	h = h + fc2(gelu(fc1(ln2(h)), approximate='tanh'))
//	loss = cross_entropy(head(lnf(h)).view(-1, V), y.view(-1), ignore_index=-100)
//	# AdamW; LinearLR(0.05, 20 steps) then CosineAnnealingLR (SequentialLR); clip_grad_norm_(params, 1)
//
// written with the nn module layer. It prints the loss, then the token accuracy on fresh
// sequences.
//
//	go run ./examples/reverse                   # default device
//	go run ./examples/reverse -device cpu -steps 200
//
// With -graph the training step is captured into a CUDA graph after the first eager step and
// replayed (graphstep.Offered; on the CPU and wherever the device cannot capture, the same step
// runs eagerly). The graph reads fixed device memory, so the step reads its batch from buffers
// made once and refilled between steps: the tokens and the targets' label positions as
// ops.Indices refilled with Update (the embedding lookups through GatherIdx, the loss through
// CrossEntropyIdx, with the bits of Embedding.Forward and CrossEntropyIgnore), the positions
// and the causal mask made once. Clipping must not read the norm back, so -graph clips with
// autograd.ClipGradNormDevice (float32 on the device) instead of ClipGradNorm (a float64 sum on
// the host): -graph changes the clipping arithmetic in the last bits, and its results equal
// those of an eager run that clips on the device, bit for bit.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep"
	"github.com/torchlean-go/torchlean/ops"
)

// The task and the model's sizes.
const (
	digits = 4          // tokens to reverse
	vocab  = digits + 6 // the digits 0 .. vocab-2, then SEP
	sep    = vocab - 1
	seqLen = 2 * digits // positions seen: x0 .. x3 SEP r0 r1 r2
	width  = 32         // embedding width
	hidden = 4 * width  // MLP width
	ignore = -100       // the target of the positions that predict nothing
)

func main() {
	device := flag.String("device", "auto", "cpu, cuda, cuda:N or auto (CUDA when usable)")
	steps := flag.Int("steps", 400, "training steps")
	batch := flag.Int("batch", 32, "sequences per step")
	lr := flag.Float64("lr", 3e-3, "peak AdamW learning rate")
	seed := flag.Uint64("seed", 1, "random seed (initialization and data)")
	save := flag.String("save", "", "safetensors file for the trained parameters (empty: none)")
	graph := flag.Bool("graph", graphDefault, "capture the training step into a CUDA graph and replay it (on a GPU; eager elsewhere); -graph clips the gradients on the device in float32 (ClipGradNormDevice), which changes the clipping arithmetic, and so the results, in the last bits; the default is the constant graphDefault")
	flag.Parse()
	if flag.NArg() > 0 || *steps < 1 || *batch < 1 || !(*lr > 0) || math.IsInf(*lr, 1) {
		log.Fatal("reverse: -steps, -batch and -lr must be positive (-lr finite); flags only (see -h)")
	}
	if dir := filepath.Dir(*save); *save != "" { // fail before training, not after
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			log.Fatalf("reverse: cannot write %s: %s is not a directory", *save, dir)
		}
	}
	d, err := ops.Open(*device)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print("device: ", d)
	if sel := ops.DefaultSelection(); *device == "auto" && d.Kind() == ops.KindCPU && sel.Reason != "" {
		fmt.Printf(" (%s)", sel.Reason)
	}
	fmt.Println()
	start := time.Now()
	m, acc, err := train(d, *steps, *batch, *lr, *seed, os.Stdout, *graph)
	if err != nil {
		log.Fatal(err)
	}
	defer m.s.Close()
	fmt.Printf("held-out token accuracy: %.1f%% (%s)\n", 100*acc, time.Since(start).Round(time.Millisecond))
	if *save != "" {
		if err := nn.SaveWeights(*save, m); err != nil {
			log.Fatal(err)
		}
		fmt.Println("parameters:", *save)
	}
}

// model is the transformer layer, a module of the nn package: its parameters' keys are the
// PyTorch program's (tok.weight, ln1.bias, fc2.weight, ...).
type model struct {
	nn.Base
	s                          *autograd.Session
	tok, pos                   *nn.Embedding
	ln1, ln2, lnf              *nn.LayerNorm
	q, k, v, o, fc1, fc2, head *nn.Linear
	mask                       []float32 // (seqLen, seqLen), 1 where position i may attend to j <= i
}

func newModel(s *autograd.Session) *model {
	m := &model{s: s,
		tok: nn.NewEmbedding(s, vocab, width), pos: nn.NewEmbedding(s, seqLen, width),
		ln1: nn.NewLayerNorm(s, width),
		q:   nn.NewLinear(s, width, width, true), k: nn.NewLinear(s, width, width, true),
		v: nn.NewLinear(s, width, width, true), o: nn.NewLinear(s, width, width, true),
		ln2: nn.NewLayerNorm(s, width),
		fc1: nn.NewLinear(s, width, hidden, true), fc2: nn.NewLinear(s, hidden, width, true),
		lnf:  nn.NewLayerNorm(s, width),
		head: nn.NewLinear(s, width, vocab, true),
	}
	for _, c := range []struct {
		name string
		m    nn.Module
	}{{"tok", m.tok}, {"pos", m.pos}, {"ln1", m.ln1}, {"q", m.q}, {"k", m.k}, {"v", m.v}, {"o", m.o},
		{"ln2", m.ln2}, {"fc1", m.fc1}, {"fc2", m.fc2}, {"lnf", m.lnf}, {"head", m.head}} {
		m.RegisterModule(c.name, c.m)
	}
	m.mask = make([]float32, seqLen*seqLen)
	for i := range seqLen {
		for j := 0; j <= i; j++ {
			m.mask[i*seqLen+j] = 1
		}
	}
	return m
}

// logits records the forward pass of a batch of token sequences (batch*seqLen tokens) and
// returns the logits, (batch, seqLen, vocab).
func (m *model) logits(tokens []int, batch int) autograd.Var {
	s := m.s
	positions := make([]int, len(tokens))
	for i := range positions {
		positions[i] = i % seqLen
	}
	h := s.Add(m.tok.Forward(tokens, batch, seqLen), m.pos.Forward(positions, batch, seqLen))
	return m.body(h, s.Input(m.mask, seqLen, seqLen), batch)
}

// body records the layer on the embedded tokens h (batch, seqLen, width) with the causal mask
// (seqLen, seqLen) and returns the logits.
func (m *model) body(h, mask autograd.Var, batch int) autograd.Var {
	s := m.s
	a := m.ln1.Forward(h)
	scores := s.Scale(s.BmmWithTranspose(m.q.Forward(a), m.k.Forward(a), false, true), 1/math.Sqrt(width))
	causal := s.BroadcastTo(mask, batch, seqLen, seqLen)
	h = s.Add(h, m.o.Forward(s.Bmm(s.MaskedSoftmax(scores, causal), m.v.Forward(a))))
	h = s.Add(h, m.fc2.Forward(s.Gelu(m.fc1.Forward(m.ln2.Forward(h)))))
	return m.head.Forward(m.lnf.Forward(h))
}

// static holds the device memory a captured step reads: made once, the batch refilled before
// each step (load).
type static struct {
	tokens, positions *ops.Indices // batch*seqLen tokens; their positions i % seqLen
	targets           *ops.Indices // the label positions of the targets (autograd.LabelPositions)
	mask              *autograd.StaticInput
}

// newStatic makes the static inputs of batches of batch sequences.
func (m *model) newStatic(batch int) (*static, error) {
	d := m.s.Device()
	st := &static{}
	positions := make([]int, batch*seqLen)
	for i := range positions {
		positions[i] = i % seqLen
	}
	var err error
	if st.tokens, err = ops.NewIndices(d, make([]int, batch*seqLen)); err == nil {
		st.positions, err = ops.NewIndices(d, positions)
	}
	if err == nil {
		st.targets, err = ops.NewIndices(d, make([]int, batch*(seqLen-digits))) // the targets from SEP on
	}
	if err == nil {
		st.mask, err = m.s.NewStaticInput(seqLen, seqLen)
	}
	if err == nil {
		err = st.mask.Set(m.mask)
	}
	if err != nil {
		st.release()
		return nil, fmt.Errorf("reverse: graph: %w", err)
	}
	return st, nil
}

// load copies a batch into the static inputs (between steps).
func (st *static) load(tokens, targets []int) error {
	pos, err := autograd.LabelPositions(targets, vocab, true, ignore)
	if err == nil {
		err = st.tokens.Update(tokens)
	}
	if err == nil {
		err = st.targets.Update(pos)
	}
	if err != nil {
		return fmt.Errorf("reverse: graph: %w", err)
	}
	return nil
}

func (st *static) release() {
	st.tokens.Release()
	st.positions.Release()
	st.targets.Release()
	if st.mask != nil {
		st.mask.Release()
	}
}

// staticLoss records the forward pass and the loss on the static inputs: logits and
// CrossEntropyIgnore's bits, the tokens and targets read from the device.
func (m *model) staticLoss(st *static, batch int) autograd.Var {
	s := m.s
	embed := func(e *nn.Embedding, ix *ops.Indices) autograd.Var { // Embedding.Forward's ops
		return s.Reshape(s.GatherIdx(s.Use(e.Weight), ix), batch, seqLen, e.Dim)
	}
	h := s.Add(embed(m.tok, st.tokens), embed(m.pos, st.positions))
	return s.CrossEntropyIdx(m.body(h, st.mask.Var(), batch), st.targets)
}

// sequences draws batch sequences: the inputs x0 .. x3 SEP r0 r1 r2 (r = x reversed) and the
// targets, the next token at the positions from SEP on and ignore before.
func sequences(rng *rand.Rand, batch int) (tokens, targets []int) {
	for range batch {
		seq := make([]int, 0, 2*digits+1)
		for range digits {
			seq = append(seq, rng.IntN(vocab-1))
		}
		seq = append(seq, sep)
		for i := digits - 1; i >= 0; i-- {
			seq = append(seq, seq[i])
		}
		tokens = append(tokens, seq[:seqLen]...)
		for t := range seqLen {
			if t >= digits {
				targets = append(targets, seq[t+1])
			} else {
				targets = append(targets, ignore)
			}
		}
	}
	return tokens, targets
}

// graphDefault is -graph's default: off until a GPU measurement shows the captured step faster;
// one line to flip.
const graphDefault = false

// mode is how train runs its steps.
type mode struct {
	graph      bool // the step offered to the capture, reading static inputs (implies deviceClip)
	deviceClip bool // ClipGradNormDevice instead of ClipGradNorm
}

// train trains a model for steps steps on device d (AdamW, a linear warm-up over the first 20
// steps into a cosine decay, gradients clipped to norm 1), logging to w when it is not nil, and
// returns the model (its session is the caller's to close) and its token accuracy on 256 fresh
// sequences. With graph the step reads static inputs, clips on the device, and is offered to
// Session.Capture after the first step (graphstep.Offered: a graph replayed, or the step called
// eagerly on a device that cannot capture); when the capture refuses a call of the step it logs
// why and goes on eagerly.
func train(d *ops.Device, steps, batch int, lr float64, seed uint64, w io.Writer, graph bool) (*model, float64, error) {
	return trainMode(d, steps, batch, lr, seed, w, mode{graph: graph, deviceClip: graph})
}

// trainMode is train with the mode spelled out (an eager run that clips on the device gives
// -graph's bits).
func trainMode(d *ops.Device, steps, batch int, lr float64, seed uint64, w io.Writer, md mode) (*model, float64, error) {
	s := autograd.NewSession(autograd.Options{Device: d, Seed: seed})
	m := newModel(s)
	o := autograd.DefaultAdamW()
	o.LR = lr
	params := nn.Parameters(m)
	opt := autograd.NewAdamW(params, o)
	sched, err := schedule(opt, steps)
	if err != nil {
		return m, 0, err
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	var tokens, targets []int // the current batch
	var st *static
	if md.graph {
		if st, err = m.newStatic(batch); err != nil {
			return m, 0, err
		}
		defer st.release() // after offered.Close
	}
	stepFn := func() (loss autograd.Var, err error) {
		s.Reset()
		if st != nil {
			loss = m.staticLoss(st, batch)
		} else {
			loss = s.CrossEntropyIgnore(m.logits(tokens, batch), targets, ignore)
		}
		s.Backward(loss)
		if err := graphstep.ClipGradNorm(params, 1, md.graph || md.deviceClip); err != nil {
			return loss, err
		}
		opt.Step()
		opt.ZeroGrad()
		return loss, nil
	}
	var logf func(string) // the refusal's line
	if w != nil {
		logf = func(line string) { fmt.Fprintln(w, line) }
	}
	offered := graphstep.NewOfferedLoss(s, stepFn, md.graph, logf) // -graph: offered before the second step
	defer offered.Close()
	for step := range steps {
		tokens, targets = sequences(rng, batch)
		if st != nil {
			if err := st.load(tokens, targets); err != nil {
				return m, 0, err
			}
		}
		if err := offered.Run(); err != nil {
			return m, 0, err
		}
		sched.Step()
		if w != nil && (step%50 == 0 || step == steps-1) {
			l, err := offered.Loss()
			if err != nil {
				return m, 0, err
			}
			fmt.Fprintf(w, "step %4d  loss %.4f\n", step, l)
		}
	}
	acc := m.accuracy(rng)
	return m, acc, s.Err()
}

// schedule returns the learning-rate schedule of a run of steps steps: a linear warm-up from
// 1/20 of the peak over 20 steps (fewer in a short run), then a cosine decay to 0 over the rest.
func schedule(opt *autograd.Adam, steps int) (nn.Scheduler, error) {
	warm := min(20, steps/2)
	cos, err := nn.NewCosineAnnealingLR(opt, max(steps-warm, 1), 0)
	if err != nil || warm < 1 {
		return cos, err
	}
	return nn.NewLinearWarmup(opt, warm, 0.05, cos)
}

// accuracy returns the share of the predicted tokens of 256 fresh sequences that the model gets
// right.
func (m *model) accuracy(rng *rand.Rand) float64 {
	const n = 256
	tokens, targets := sequences(rng, n)
	s := m.s
	s.Reset()
	var pred []int
	s.NoGrad(func() { pred = s.Argmax(m.logits(tokens, n)) })
	right, total := 0, 0
	for r, t := range targets {
		if t == ignore || pred == nil {
			continue
		}
		if pred[r] == t {
			right++
		}
		total++
	}
	return float64(right) / float64(max(total, 1))
}
