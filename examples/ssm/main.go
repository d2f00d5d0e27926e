// Command ssm trains a character-level language model built from gated selective-scan blocks
// (Mamba-style, model.go) on Isaac Newton's Opticks (1730, public domain; examples/internal/text
// embeds it), on the CPU or a CUDA device. It prints a progress bar with the training loss,
// the validation loss in bits per character at intervals, writes a PNG of both curves and ends
// with a sample of generated text.
//
//	go run ./examples/ssm                            # default device: CUDA when usable, else the CPU
//	go run ./examples/ssm -device cpu -steps 200
//	go run ./examples/ssm -checkpoint run.safetensors -stop-after 300   # then again to resume
//
// The text's last tenth is the validation split, never trained on. A training step takes -batch
// windows of -seq characters at random offsets of the training split (nn.TokenWindows of stride
// 1 in a shuffled nn.Loader) and predicts each next character: cross-entropy, AdamW with a
// linear warm-up into a cosine decay, gradients clipped to norm 1. Losses are reported in bits
// per character (the cross-entropy in nats / ln 2). The validation loss is the mean over the
// whole validation split, cut into windows of -seq characters, each read from a zero state.
//
// The defaults depend on the device. On the CPU: 3 blocks of width 96 (192 scan channels, 0.3M
// parameters), 500 steps of 32 windows of 128 characters; the validation loss passes 2.0 bits
// per character after about 150 steps (35 s) and ends near 1.68, in about two minutes on two
// shared cores. On a GPU: 6 blocks of width 384, 3000 steps of 64 windows of 256 characters.
//
// With -graph the training step is captured into a CUDA graph after the first eager step and
// replayed (graphstep.Offered; on the CPU and wherever the device cannot capture, the same step
// runs eagerly). The graph reads fixed device memory, so the step reads its batch from buffers
// made once and refilled between steps: the tokens and the labels' positions as ops.Indices
// refilled with Update (the embedding through GatherIdx, the loss through CrossEntropyIdx, with
// the bits of Embedding.Forward and CrossEntropy), the blocks' zero initial states and
// convolution padding as static inputs made once. Clipping must not read the norm back, so
// -graph clips with autograd.ClipGradNormDevice (float32 on the device) instead of ClipGradNorm
// (a float64 sum on the host): -graph changes the clipping arithmetic in the last bits, and its
// results equal those of an eager run that clips on the device, bit for bit.
package main

import (
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"io/fs"
	"log"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep"
	"github.com/torchlean-go/torchlean/examples/internal/text"
	"github.com/torchlean-go/torchlean/ops"
)

// options are the run's settings (the flags).
type options struct {
	Steps, Batch, Seq int
	Width, Layers     int
	LR                float64
	Seed              uint64
	EvalEvery         int
	Sample            int
	Temperature       float64
	Prompt            string
	Plot, Checkpoint  string
	StopAfter         int
	EvalWindows       int  // validation windows per evaluation (0: all of them)
	Graph             bool // capture the step (static inputs, ClipGradNormDevice)
	DeviceClip        bool // eager steps that clip with ClipGradNormDevice, as -graph does
}

// defaults returns the default settings on a device of kind k: a small model on the CPU, a
// larger one trained longer on a GPU.
func defaults(gpu bool) options {
	o := options{Steps: 500, Batch: 32, Seq: 128, Width: 96, Layers: 3, LR: 4e-3, Seed: 1,
		EvalEvery: 50, Sample: 400, Temperature: 0.8, Prompt: "The Rays of Light ", Plot: "ssm.png"}
	if gpu {
		o.Steps, o.Batch, o.Seq, o.Width, o.Layers, o.LR = 3000, 64, 256, 384, 6, 2e-3
		o.EvalEvery = 250
	}
	return o
}

func main() {
	device := flag.String("device", "auto", "cpu, cuda, cuda:N or auto (CUDA when usable)")
	steps := flag.Int("steps", 0, "training steps (0: the device's default, 500 on the CPU, 3000 on a GPU)")
	batch := flag.Int("batch", 0, "windows per step (0: 32 on the CPU, 64 on a GPU)")
	seq := flag.Int("seq", 0, "characters per window (0: 128 on the CPU, 256 on a GPU)")
	width := flag.Int("d", 0, "width of the residual stream; the scan has 2·d channels (0: 96 on the CPU, 384 on a GPU)")
	layers := flag.Int("layers", 0, "blocks (0: 3 on the CPU, 6 on a GPU)")
	lr := flag.Float64("lr", 0, "peak AdamW learning rate (0: 4e-3 on the CPU, 2e-3 on a GPU)")
	seed := flag.Uint64("seed", 1, "random seed (initialization, window order, sampling)")
	evalEvery := flag.Int("eval-every", 0, "steps between validation losses (0: 50 on the CPU, 250 on a GPU)")
	sample := flag.Int("sample", 400, "characters to generate at the end (0: none)")
	temperature := flag.Float64("temperature", 0.8, "sampling temperature (0: the most likely character each time)")
	prompt := flag.String("prompt", "The Rays of Light ", "text the sample starts from")
	plotPath := flag.String("plot", "ssm.png", "PNG file for the loss curves (empty: none)")
	checkpoint := flag.String("checkpoint", "", "safetensors file saved at every evaluation and resumed from when it exists (empty: none)")
	stopAfter := flag.Int("stop-after", 0, "stop after this step (0: run every step), to resume later from -checkpoint")
	cpuProfile := flag.String("cpuprofile", "", "file for a CPU profile of the run (go tool pprof; empty: none)")
	graph := flag.Bool("graph", graphDefault, "capture the training step into a CUDA graph and replay it (on a GPU; eager elsewhere); -graph clips the gradients on the device in float32 (ClipGradNormDevice), which changes the clipping arithmetic, and so the results, in the last bits; the default is the constant graphDefault")
	flag.Parse()
	if flag.NArg() > 0 {
		log.Fatalf("ssm: unexpected argument %q (flags go before it; see -h)", flag.Arg(0))
	}
	for _, out := range []string{*plotPath, *checkpoint} { // fail before training, not after
		if dir := filepath.Dir(out); out != "" {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				log.Fatalf("ssm: cannot write %s: %s is not a directory", out, dir)
			}
		}
	}
	d, err := ops.Open(*device)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("device: %s", d)
	if sel := ops.DefaultSelection(); *device == "auto" && d.Kind() == ops.KindCPU && sel.Reason != "" {
		fmt.Printf(" (%s)", sel.Reason)
	}
	fmt.Println()
	o := defaults(d.Kind() != ops.KindCPU)
	o.Graph = *graph
	for _, f := range []struct {
		dst *int
		v   int
	}{{&o.Steps, *steps}, {&o.Batch, *batch}, {&o.Seq, *seq}, {&o.Width, *width}, {&o.Layers, *layers}, {&o.EvalEvery, *evalEvery}} {
		if f.v != 0 {
			*f.dst = f.v
		}
	}
	if *lr != 0 {
		o.LR = *lr
	}
	o.Seed, o.Sample, o.Temperature, o.Prompt = *seed, *sample, *temperature, *prompt
	o.Plot, o.Checkpoint, o.StopAfter = *plotPath, *checkpoint, *stopAfter
	if err := o.check(); err != nil {
		log.Fatal(err)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	if _, err := run(d, o, os.Stdout); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("total %s\n", time.Since(start).Round(time.Millisecond))
	fmt.Println("allocator:", d.Stats())
}

// check returns an error for settings the run cannot use.
func (o options) check() error {
	switch {
	case o.Steps < 1 || o.Batch < 1 || o.Seq < 1 || o.Width < 1 || o.Layers < 1 || o.EvalEvery < 1:
		return errors.New("ssm: -steps, -batch, -seq, -d, -layers and -eval-every must be positive")
	case !(o.LR > 0) || math.IsInf(o.LR, 1):
		return errors.New("ssm: -lr must be positive and finite")
	case o.Sample < 0 || !(o.Temperature >= 0) || math.IsInf(o.Temperature, 1):
		return errors.New("ssm: -sample and -temperature must be >= 0 (and -temperature finite)")
	case o.StopAfter < 0:
		return errors.New("ssm: -stop-after must be >= 0")
	}
	return nil
}

// result is what a run ends with.
type result struct {
	Model          *model
	Session        *autograd.Session
	Corpus         *text.Corpus
	TrainBPC       float64 // mean training loss of the last evaluation interval
	ValBPC         float64 // validation loss at the end
	Curves         curves
	Sample         string
	FirstTrainLoss float64 // the first step's loss, bits per character
}

// run trains a model with the settings o on device d, printing to w, and returns it (the
// session is closed before run returns, unless an error came first).
func run(d *ops.Device, o options, w io.Writer) (res *result, err error) {
	corpus := text.OpticksCorpus()
	cfg := config{Vocab: corpus.Vocab.Size(), D: o.Width, Inner: 2 * o.Width, Layers: o.Layers, Conv: 4}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if len(corpus.Val) < o.Seq+1 {
		return nil, fmt.Errorf("ssm: -seq %d is longer than the validation split (%d characters)", o.Seq, len(corpus.Val))
	}
	s := autograd.NewSession(autograd.Options{Device: d, Seed: o.Seed})
	defer func() {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}()
	m := newModel(s, cfg)
	fmt.Fprintf(w, "text: Opticks, %d characters (%d distinct): %d for training, %d for validation\n",
		len(corpus.Train)+len(corpus.Val), cfg.Vocab, len(corpus.Train), len(corpus.Val))
	fmt.Fprintf(w, "model: %d selective-scan blocks, d %d, %d scan channels, %d parameters\n",
		cfg.Layers, cfg.D, cfg.Inner, nn.NumParameters(m))
	ao := autograd.DefaultAdamW()
	ao.LR = o.LR
	ao.Beta2 = 0.99
	ao.WeightDecay = 0.1
	params := nn.Parameters(m)
	opt := autograd.NewAdamW(params, ao)
	defer opt.Close()
	sched, err := schedule(opt, o.Steps)
	if err != nil {
		return nil, err
	}
	windows, err := nn.NewTokenWindows(corpus.Train, o.Seq, 1)
	if err != nil {
		return nil, err
	}
	loader, err := nn.NewLoader(windows, nn.LoaderOptions{BatchSize: o.Batch, Shuffle: true, Seed: o.Seed, DropLast: true, Device: d, Prefetch: 1})
	if err != nil {
		return nil, err
	}
	defer loader.Close()
	ck := nn.Checkpoint{Model: m, Optimizer: opt, Scheduler: sched, Session: s}
	first := 0 // steps done
	if o.Checkpoint != "" {
		switch err := ck.Load(o.Checkpoint); {
		case err == nil:
			first = ck.Step
			fmt.Fprintf(w, "resumed from %s after step %d\n", o.Checkpoint, first)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	last := o.Steps
	if o.StopAfter > 0 {
		last = min(last, o.StopAfter)
	}
	res = &result{Model: m, Session: s, Corpus: corpus, ValBPC: math.NaN(), TrainBPC: math.NaN(), FirstTrainLoss: math.NaN()}
	trainStart := time.Now()
	perEpoch := loader.Len()
	step := first
	sum, n := 0.0, 0
	bar := newProgress(w, "train", o.Steps)
	bar.done = first
	var batch *nn.Batch // the current batch
	var st *static
	if o.Graph {
		if st, err = newStatic(m, o.Batch, o.Seq); err != nil {
			return nil, err
		}
		defer st.release() // after offered.Close
	}
	stepFn := func() (loss autograd.Var, err error) {
		s.Reset()
		loss = m.stepLoss(st, batch, o.Batch, o.Seq)
		s.Backward(loss)
		if err := graphstep.ClipGradNorm(params, 1, o.Graph || o.DeviceClip); err != nil {
			return loss, err
		}
		opt.Step()
		opt.ZeroGrad()
		return loss, nil
	}
	offered := graphstep.NewOfferedLoss(s, stepFn, o.Graph, bar.log) // -graph: offered before the run's second step
	defer offered.Close()
	for step < last {
		epoch, at := step/perEpoch, step%perEpoch
		for b := range loader.EpochFrom(epoch, at) {
			batch = b
			if st != nil {
				if err := st.load(b, o.Batch, o.Seq); err != nil {
					return nil, err
				}
			}
			if err := offered.Run(); err != nil {
				return nil, err
			}
			sched.Step()
			l, err := offered.Loss()
			if err != nil {
				return nil, err
			}
			bpc := float64(l) / math.Ln2
			if err := s.Err(); err != nil {
				return nil, err
			}
			if step == 0 {
				res.FirstTrainLoss = bpc
			}
			step++
			sum += bpc
			n++
			res.Curves.addStep(step, bpc)
			bar.update(step, func() string { return fmt.Sprintf("loss %.3f bpc", sum/float64(n)) })
			if step%o.EvalEvery == 0 || step == last {
				res.TrainBPC = sum / float64(n)
				res.ValBPC = evaluate(m, corpus.Val, o.Seq, 64, o.EvalWindows)
				if err := s.Err(); err != nil {
					return nil, err
				}
				res.Curves.add(step, res.TrainBPC, res.ValBPC)
				bar.log(fmt.Sprintf("step %5d  train %.3f bpc  val %.3f bpc  lr %.2e  (%s)", step, res.TrainBPC, res.ValBPC,
					opt.LR(), time.Since(trainStart).Round(100*time.Millisecond)))
				sum, n = 0, 0
				if o.Checkpoint != "" {
					ck.Step = step
					if err := ck.Save(o.Checkpoint); err != nil {
						return nil, err
					}
				}
			}
			if step >= last {
				break
			}
		}
		if err := loader.Err(); err != nil {
			return nil, err
		}
	}
	bar.finish()
	if first >= last { // nothing left to train: evaluate the resumed model
		res.ValBPC = evaluate(m, corpus.Val, o.Seq, 64, 0)
	}
	fmt.Fprintf(w, "validation loss: %.3f bits per character after %d steps (training %s)\n",
		res.ValBPC, step, time.Since(trainStart).Round(100*time.Millisecond))
	if o.Plot != "" && len(res.Curves.steps) > 0 {
		if err := res.Curves.plot(o.Plot, cfg); err != nil {
			return nil, err
		}
		fmt.Fprintln(w, "plot:", o.Plot)
	}
	if o.Sample > 0 {
		res.Sample = generate(m, corpus.Vocab, o.Prompt, o.Sample, o.Seq, o.Temperature)
		if err := s.Err(); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "sample (temperature %g):\n%s\n", o.Temperature, res.Sample)
	}
	return res, s.Err()
}

// graphDefault is -graph's default: off until a GPU measurement shows the captured step faster;
// one line to flip.
const graphDefault = false

// static is the device memory a captured step reads: made once, the batch refilled before each
// step (load).
type static struct {
	m              *model
	tokens, labels *ops.Indices // time-major tokens; the labels' positions (autograd.LabelPositions)
	zeros          *zeroInputs
}

// newStatic makes the static inputs of batches of batch windows of seq characters, and gives
// the blocks their zero inputs.
func newStatic(m *model, batch, seq int) (*static, error) {
	d := m.s.Device()
	st := &static{m: m}
	var err error
	if st.tokens, err = ops.NewIndices(d, make([]int, seq*batch)); err == nil {
		st.labels, err = ops.NewIndices(d, make([]int, seq*batch))
	}
	if err == nil {
		st.zeros, err = newZeroInputs(m.s, m.cfg, batch)
	}
	if err != nil {
		st.release()
		return nil, fmt.Errorf("ssm: graph: %w", err)
	}
	for _, b := range m.blocks {
		b.zeros = st.zeros
	}
	return st, nil
}

// load copies the batch b into the static inputs (between steps).
func (st *static) load(b *nn.Batch, batch, seq int) error {
	pos, err := autograd.LabelPositions(timeMajor(b.Labels, batch, seq), st.m.cfg.Vocab, false, 0)
	if err == nil {
		err = st.tokens.Update(timeMajor(b.Tokens, batch, seq))
	}
	if err == nil {
		err = st.labels.Update(pos)
	}
	if err != nil {
		return fmt.Errorf("ssm: graph: %w", err)
	}
	return nil
}

// stepLoss records a training step's loss on batch windows of seq characters: on the static
// inputs st (-graph) when st is not nil, else on the host batch b.
func (m *model) stepLoss(st *static, b *nn.Batch, batch, seq int) autograd.Var {
	if st != nil {
		return m.s.CrossEntropyIdx(m.logitsIdx(st.tokens, seq, batch), st.labels)
	}
	return m.s.CrossEntropy(m.logits(timeMajor(b.Tokens, batch, seq), seq, batch), timeMajor(b.Labels, batch, seq))
}

func (st *static) release() {
	for _, b := range st.m.blocks {
		b.zeros = nil
	}
	st.tokens.Release()
	st.labels.Release()
	if st.zeros != nil {
		st.zeros.release()
	}
}

// schedule returns the learning-rate schedule of a run of steps steps: a linear warm-up from
// a tenth of the peak over the first 5% of the steps (at most 100), then a cosine decay to a
// tenth of the peak.
func schedule(opt *autograd.Adam, steps int) (nn.Scheduler, error) {
	warm := min(100, steps/20)
	cos, err := nn.NewCosineAnnealingLR(opt, max(steps-warm, 1), opt.LR()/10)
	if err != nil || warm < 1 {
		return cos, err
	}
	return nn.NewLinearWarmup(opt, warm, 0.1, cos)
}

// evaluate returns the mean cross-entropy, in bits per character, of the model's predictions
// of val cut into windows of seq characters (each predicting its next characters from a zero
// state), batch windows per forward pass, without gradients; limit > 0 evaluates only the first
// limit windows. Errors stay in the session.
func evaluate(m *model, val []int, seq, batch, limit int) float64 {
	s := m.s
	nWin := (len(val) - 1) / seq
	if limit > 0 {
		nWin = min(nWin, limit)
	}
	total, count := 0.0, 0
	nn.Eval(m)
	defer nn.Train(m)
	for w0 := 0; w0 < nWin; w0 += batch {
		nb := min(batch, nWin-w0)
		tokens := timeMajor(val[w0*seq:(w0+nb)*seq], nb, seq)
		labels := timeMajor(val[w0*seq+1:(w0+nb)*seq+1], nb, seq)
		s.Reset()
		s.NoGrad(func() {
			loss := s.CrossEntropy(m.logits(tokens, seq, nb), labels)
			total += float64(s.Item(loss)) * float64(nb*seq)
		})
		count += nb * seq
	}
	s.Reset()
	return total / float64(max(count, 1)) / math.Ln2
}

// generate returns n characters sampled from the model after prompt, each from the softmax of
// the logits divided by temperature (the most likely one at temperature 0), the model reading
// the last seq characters at each step.
func generate(m *model, v *text.Vocab, prompt string, n, seq int, temperature float64) string {
	s := m.s
	ids, err := v.Encode(prompt)
	if err != nil {
		s.Fail(fmt.Errorf("ssm: prompt: %w", err))
		return ""
	}
	if len(ids) == 0 {
		ids = []int{0}
	}
	nn.Eval(m)
	defer nn.Train(m)
	out := []int{}
	for range n {
		ctx := ids[max(0, len(ids)-seq):]
		s.Reset()
		var next int
		s.NoGrad(func() {
			logits := s.Narrow(m.logits(ctx, len(ctx), 1), 0, len(ctx)-1, 1)
			logits = s.Reshape(logits, 1, m.cfg.Vocab)
			if temperature == 0 {
				if am := s.Argmax(logits); len(am) == 1 {
					next = am[0]
				}
				return
			}
			draw := s.Multinomial(s.Softmax(s.Scale(logits, 1/temperature)), 1, true).Values()
			if len(draw) == 1 {
				next = draw[0]
			}
		})
		if s.Err() != nil {
			return ""
		}
		ids = append(ids, next)
		out = append(out, next)
	}
	s.Reset()
	return prompt + v.Decode(out)
}

// curves are the training loss of every step and the training and validation losses at each
// evaluation.
type curves struct {
	steps      []int // the evaluations' steps
	train, val []float64
	perStep    plotter.XYs // (step, training loss)
}

func (c *curves) addStep(step int, bpc float64) {
	c.perStep = append(c.perStep, plotter.XY{X: float64(step), Y: bpc})
}

func (c *curves) add(step int, train, val float64) {
	c.steps = append(c.steps, step)
	c.train = append(c.train, train)
	c.val = append(c.val, val)
}

// plot writes a PNG of the curves.
func (c *curves) plot(path string, cfg config) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("selective-scan LM on Opticks (%d blocks, d %d)", cfg.Layers, cfg.D)
	p.X.Label.Text = "step"
	p.Y.Label.Text = "bits per character"
	p.Add(plotter.NewGrid())
	finite := func(xy plotter.XYs) plotter.XYs {
		var out plotter.XYs
		for _, v := range xy {
			if !math.IsNaN(v.Y) && !math.IsInf(v.Y, 0) {
				out = append(out, v)
			}
		}
		return out
	}
	const group = 10 // the training curve: the mean of each group of steps
	var train plotter.XYs
	for at := 0; at < len(c.perStep); at += group {
		part := c.perStep[at:min(at+group, len(c.perStep))]
		sum := 0.0
		for _, v := range part {
			sum += v.Y
		}
		train = append(train, plotter.XY{X: part[len(part)-1].X, Y: sum / float64(len(part))})
	}
	blue, red := color.RGBA{R: 30, G: 90, B: 200, A: 255}, color.RGBA{R: 200, G: 30, B: 30, A: 255}
	if xy := finite(train); len(xy) > 0 {
		line, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		line.Color, line.Width = blue, vg.Points(1)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("training (mean of %d steps)", group), line)
	}
	val := make(plotter.XYs, len(c.val))
	for i, y := range c.val {
		val[i] = plotter.XY{X: float64(c.steps[i]), Y: y}
	}
	if xy := finite(val); len(xy) > 0 {
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		line.Color, line.Width, points.Color = red, vg.Points(1.5), red
		p.Add(line, points)
		p.Legend.Add("validation", line, points)
	}
	p.Legend.Top = true
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

// progress is a one-line text progress bar written to w. On a terminal it redraws itself in
// place, with log lines printed above it; elsewhere (a log, a pipe) only the log lines appear.
type progress struct {
	w          io.Writer
	label      string
	total      int
	done       int
	note       string
	terminal   bool
	lastUpdate time.Time
}

func newProgress(w io.Writer, label string, total int) *progress {
	p := &progress{w: w, label: label, total: total}
	if f, ok := w.(*os.File); ok {
		fi, err := f.Stat()
		p.terminal = err == nil && fi.Mode()&os.ModeCharDevice != 0
	}
	return p
}

func (p *progress) line() string {
	const width = 30
	fill := width * min(p.done, p.total) / max(p.total, 1)
	return fmt.Sprintf("%s [%s%s] %d/%d  %s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), p.done, p.total, p.note)
}

// update records done of total steps finished and redraws the bar (at most 10 times a second)
// with the note that note returns (called only then).
func (p *progress) update(done int, note func() string) {
	p.done = done
	if !p.terminal || (time.Since(p.lastUpdate) < 100*time.Millisecond && done < p.total) {
		return
	}
	p.lastUpdate = time.Now()
	p.note = note()
	fmt.Fprintf(p.w, "\r\033[K%s", p.line())
}

// log prints a line above the bar.
func (p *progress) log(line string) {
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s\n%s", line, p.line())
		return
	}
	fmt.Fprintln(p.w, line)
}

// finish ends the bar's line.
func (p *progress) finish() {
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s\n", p.line())
	}
}
