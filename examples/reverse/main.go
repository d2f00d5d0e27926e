// Command reverse trains a one-layer causal transformer (pre-norm, single-head self-attention and
// a GELU MLP) to reverse a sequence of digits, on the CPU or a CUDA device: given x0 .. x3 SEP it
// predicts x3 x2 x1 x0, one token at a time. It is the PyTorch program
//
//	h = tok(x) + pos(arange(T))
//	a = ln1(h); s = q(a) @ k(a).transpose(-2, -1) / sqrt(D)
//	h = h + o(s.masked_fill(~causal, -inf).softmax(-1) @ v(a))
//	h = h + fc2(gelu(fc1(ln2(h)), approximate='tanh'))
//	loss = cross_entropy(head(lnf(h)).view(-1, V), y.view(-1), ignore_index=-100)
//	# AdamW, 20 warm-up steps and cosine decay, clip_grad_norm_(params, 1) before each step
//
// written with the autograd session. It prints the loss, then the token accuracy on fresh
// sequences.
//
//	go run ./examples/reverse                   # default device
//	go run ./examples/reverse -device cpu -steps 200
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
	sess, acc, err := train(d, *steps, *batch, *lr, *seed, os.Stdout)
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	fmt.Printf("held-out token accuracy: %.1f%% (%s)\n", 100*acc, time.Since(start).Round(time.Millisecond))
	if *save != "" {
		sd, err := sess.StateDict()
		if err == nil {
			err = autograd.SaveTensorsFile(*save, sd, map[string]string{"model": "reverse"})
			autograd.ReleaseTensors(sd)
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("parameters:", *save)
	}
}

// model holds the parameters of the transformer layer.
type model struct {
	p    map[string]*autograd.Param
	mask []float32 // (seqLen, seqLen), 1 where position i may attend to j <= i
}

func newModel(s *autograd.Session) *model {
	m := &model{p: map[string]*autograd.Param{}}
	linear := func(name string, out, in int) { // nn.Linear's default init
		b := 1 / math.Sqrt(float64(in))
		m.p[name+".weight"] = s.ParamUniform(name+".weight", []int{out, in}, -b, b)
		m.p[name+".bias"] = s.ParamUniform(name+".bias", []int{out}, -b, b)
	}
	norm := func(name string) {
		ones := make([]float32, width)
		for i := range ones {
			ones[i] = 1
		}
		m.p[name+".weight"] = s.Param(name+".weight", []int{width}, ones)
		m.p[name+".bias"] = s.Param(name+".bias", []int{width}, nil)
	}
	m.p["tok.weight"] = s.ParamNormal("tok.weight", []int{vocab, width}, 0, 1) // nn.Embedding's init
	m.p["pos.weight"] = s.ParamNormal("pos.weight", []int{seqLen, width}, 0, 1)
	norm("ln1")
	for _, name := range []string{"q", "k", "v", "o"} {
		linear(name, width, width)
	}
	norm("ln2")
	linear("fc1", hidden, width)
	linear("fc2", width, hidden)
	norm("lnf")
	linear("head", vocab, width)
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
func (m *model) logits(s *autograd.Session, tokens []int, batch int) autograd.Var {
	use := func(name string) autograd.Var { return s.Use(m.p[name]) }
	linear := func(x autograd.Var, name string) autograd.Var {
		return s.Linear(x, use(name+".weight"), use(name+".bias"))
	}
	norm := func(x autograd.Var, name string) autograd.Var { // nn.LayerNorm's epsilon
		return s.LayerNormEps(x, use(name+".weight"), use(name+".bias"), 1e-5)
	}
	positions := make([]int, len(tokens))
	for i := range positions {
		positions[i] = i % seqLen
	}
	h := s.Add(s.Gather(use("tok.weight"), tokens), s.Gather(use("pos.weight"), positions))
	h = s.Reshape(h, batch, seqLen, width)
	a := norm(h, "ln1")
	scores := s.Scale(s.BmmWithTranspose(linear(a, "q"), linear(a, "k"), false, true), 1/math.Sqrt(width))
	causal := s.BroadcastTo(s.Input(m.mask, seqLen, seqLen), batch, seqLen, seqLen)
	h = s.Add(h, linear(s.Bmm(s.MaskedSoftmax(scores, causal), linear(a, "v")), "o"))
	h = s.Add(h, linear(s.Gelu(linear(norm(h, "ln2"), "fc1")), "fc2"))
	return linear(norm(h, "lnf"), "head")
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

// train trains a model for steps steps on device d (AdamW, 20 warm-up steps, cosine decay,
// gradients clipped to norm 1), logging to w when it is not nil, and returns its session (the
// caller closes it) and the model's token accuracy on 256 fresh sequences.
func train(d *ops.Device, steps, batch int, lr float64, seed uint64, w io.Writer) (*autograd.Session, float64, error) {
	s := autograd.NewSession(autograd.Options{Device: d, Seed: seed})
	m := newModel(s)
	o := autograd.DefaultAdamW()
	o.LR = lr
	opt := autograd.NewAdamW(s.Params(), o)
	rng := rand.New(rand.NewPCG(seed, 7))
	for step := range steps {
		opt.SetLR(lr * min(1, float64(step+1)/20) * 0.5 * (1 + math.Cos(math.Pi*float64(step)/float64(steps))))
		s.Reset()
		tokens, targets := sequences(rng, batch)
		loss := s.CrossEntropyIgnore(m.logits(s, tokens, batch), targets, ignore)
		s.Backward(loss)
		if _, err := autograd.ClipGradNorm(s.Params(), 1); err != nil {
			return s, 0, err
		}
		opt.Step()
		opt.ZeroGrad()
		if w != nil && (step%50 == 0 || step == steps-1) {
			fmt.Fprintf(w, "step %4d  loss %.4f\n", step, s.Item(loss))
		}
	}
	acc := m.accuracy(s, rng)
	return s, acc, s.Err()
}

// accuracy returns the share of the predicted tokens of 256 fresh sequences that the model gets
// right.
func (m *model) accuracy(s *autograd.Session, rng *rand.Rand) float64 {
	const n = 256
	tokens, targets := sequences(rng, n)
	s.Reset()
	var pred []int
	s.NoGrad(func() { pred = s.Argmax(m.logits(s, tokens, n)) })
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
