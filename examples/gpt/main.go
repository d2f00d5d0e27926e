// Command gpt trains a character-level GPT, a decoder-only transformer, on Isaac Newton's
// Opticks (1730, public domain; examples/internal/text embeds it), on the CPU or a CUDA device.
// It prints a progress bar, the training and validation losses in bits per character, writes a
// PNG of both curves and ends with a sample of generated text.
//
//	go run ./examples/gpt                        # default device: CUDA when usable, else the CPU
//	go run ./examples/gpt -device cpu -steps 300 -sample 1000 -temperature 0.6
//	go run ./examples/gpt -checkpoint run.safetensors -stop-after 200   # then again to resume
//	go run ./examples/gpt -ddp                   # data parallel: every local GPU, else 2 CPU ranks
//	go run ./examples/gpt -graph                 # capture the training step into a CUDA graph (GPU)
//	RANK=0 WORLD_SIZE=2 MASTER_ADDR=host0 ./gpt  # one rank of a torchrun-style group (one per GPU)
//
// The model is GPT-2's, small: token and position embeddings, -layers pre-norm blocks
// (LayerNorm, causal multi-head self-attention on the flash-attention kernels, a residual add;
// LayerNorm, an MLP of width 4·d with GELU, a residual add), a final LayerNorm and a linear head
// over the characters (model.go). A training step takes -batch windows of -seq characters at
// random offsets of the training split (nn.TokenWindows of stride 1 in a shuffled nn.Loader)
// and predicts every next character: cross-entropy, AdamW (weight decay 0.1, betas 0.9 and 0.99)
// with a linear warm-up into a cosine decay to a tenth of -lr, gradients clipped to norm 1.
// Losses are in bits per character: the cross-entropy in nats divided by ln 2. A tenth of the
// text, the last of every ten blocks of 5,000 characters (text.OpticksCorpus), is the
// validation split, never trained on; its loss is the mean over all of it, cut into windows of
// -seq characters.
//
// The defaults depend on the device. On the CPU: 2 layers, d 128, 4 heads, 32 characters of
// context (0.42M parameters), 1000 steps of 64 windows, which get below 2.0 bits per character
// on the validation split (about 1.90) in under three minutes on two cores; the context is
// short because the CPU's attention kernels cost more per value than its matrix products. On a
// GPU: 6 layers, d 384, 6 heads of 64 channels, 256 characters of context (10.8M parameters),
// 3000 steps of 64 windows (not yet run on a GPU). At the end the model writes -sample
// characters after -prompt, each drawn from its softmax at -temperature (0: always the
// likeliest).
//
// Data parallel (package autograd/dist, PyTorch's DistributedDataParallel): -ddp trains one
// replica per local CUDA device, one goroutine each, the gradients averaged over NCCL after
// every backward pass (overlapping it); on a machine without a usable GPU (or with -device
// cpu), -ranks in-process CPU ranks. Launched torchrun-style (RANK and WORLD_SIZE, with
// LOCAL_RANK, MASTER_ADDR and MASTER_PORT, in the environment), the process is one rank of a
// group of processes on one or several machines (dist.Init; cuda:LOCAL_RANK, else the CPU). Each
// rank trains on its shard of every epoch's shuffled windows, -batch windows per step, so a step
// sees ranks times -batch windows. Rank 0 alone prints the progress, evaluates, writes the plot
// and the checkpoint, and samples; every rank reads -checkpoint when it exists (on several
// machines, put it where all of them see it). -exact makes NCCL's all-reduce the fixed-order one,
// whose results equal the same ranks simulated on the CPU bit for bit (in deterministic mode).
//
// With -graph the training step is captured into a CUDA graph after the first eager step and
// replayed (examples/internal/graphstep; on the CPU and wherever the device cannot capture, the
// same step runs eagerly). The graph reads fixed device memory, so the step reads its batch from
// buffers made once and refilled between steps: the tokens and the labels' positions as
// ops.Indices refilled with Update (the embeddings through GatherIdx, the loss through
// CrossEntropyIdx, with the bits of Embedding.Forward and CrossEntropy), the positions made once.
// Clipping must not read the norm back, so -graph clips with autograd.ClipGradNormDevice
// (float32 on the device) instead of ClipGradNorm (a float64 sum on the host): -graph changes
// the clipping arithmetic in the last bits, and its results equal those of an eager run that
// clips on the device, bit for bit. With -ddp graphs are not used (the run says so, and clips
// on the host):
// the gradients' all-reduces are NCCL calls, or host exchanges between the CPU ranks, that a
// capture refuses, and a refused all-reduce aborts the whole group (dist.DDP.Backward) instead
// of falling back.
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
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
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/dist"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep"
	"github.com/torchlean-go/torchlean/examples/internal/term"
	"github.com/torchlean-go/torchlean/examples/internal/text"
	"github.com/torchlean-go/torchlean/ops"
)

// options are the run's settings (the flags).
type options struct {
	Steps, Batch, Seq        int
	Width, Heads, Layers     int
	LR                       float64
	Seed                     uint64
	Warmup, EvalEvery        int
	ValChars                 int // validation characters evaluated (0: the whole validation split)
	Sample                   int
	Temperature              float64
	Prompt, Plot, Checkpoint string
	StopAfter                int
	DDP                      bool // data parallel over the local devices (or ranks of Init)
	Ranks                    int  // in-process CPU ranks of -ddp when no GPU is used
	Exact                    bool // the fixed-order all-reduce on NCCL too
	Graph                    bool // capture the step: static inputs, ClipGradNormDevice (not with DDP)
	DeviceClip               bool // eager steps that clip with ClipGradNormDevice, as -graph does
}

// defaults returns the default settings: a small model on the CPU, a larger one trained longer
// on a GPU.
func defaults(gpu bool) options {
	o := options{Steps: 1000, Batch: 64, Seq: 32, Width: 128, Heads: 4, Layers: 2, LR: 5e-3, Seed: 1,
		Warmup: 30, EvalEvery: 200, Sample: 500, Temperature: 0.8, Prompt: "The Colours of ", Plot: "gpt.png"}
	if gpu {
		o.Steps, o.Batch, o.Seq, o.Width, o.Heads, o.Layers, o.LR = 3000, 64, 256, 384, 6, 6, 1e-3
		o.Warmup, o.EvalEvery = 100, 250
	}
	return o
}

func main() {
	device := flag.String("device", "auto", "cpu, cuda, cuda:N or auto (CUDA when usable)")
	steps := flag.Int("steps", 0, "training steps (0: the device's default, 1000 on the CPU, 3000 on a GPU)")
	batch := flag.Int("batch", 0, "windows per step (0: 64)")
	seq := flag.Int("seq", 0, "characters per window, the model's context (0: 32 on the CPU, 256 on a GPU)")
	width := flag.Int("d", 0, "width of the residual stream (0: 128 on the CPU, 384 on a GPU)")
	heads := flag.Int("heads", 0, "attention heads, dividing -d (0: 4 on the CPU, 6 on a GPU)")
	layers := flag.Int("layers", 0, "transformer blocks (0: 2 on the CPU, 6 on a GPU)")
	lr := flag.Float64("lr", 0, "peak AdamW learning rate (0: 5e-3 on the CPU, 1e-3 on a GPU)")
	seed := flag.Uint64("seed", 1, "random seed (initialization, data order and sampling)")
	evalEvery := flag.Int("eval-every", 0, "steps between validation losses (0: 200 on the CPU, 250 on a GPU)")
	valChars := flag.Int("val-chars", 0, "validation characters each evaluation reads, from the start of the split (0: all)")
	sample := flag.Int("sample", -1, "characters to generate at the end (-1: 500; 0: none)")
	temperature := flag.Float64("temperature", 0.8, "sampling temperature (0: the likeliest character every time)")
	prompt := flag.String("prompt", "The Colours of ", "text the sample continues")
	plotPath := flag.String("plot", "gpt.png", "PNG file for the loss curves (empty: none)")
	checkpoint := flag.String("checkpoint", "", "safetensors file saved at every evaluation and resumed from when it exists (empty: none)")
	stopAfter := flag.Int("stop-after", 0, "stop after this step (0: run every step), to resume later from -checkpoint")
	cpuProfile := flag.String("cpuprofile", "", "file for a CPU profile of the run (go tool pprof; empty: none)")
	ddp := flag.Bool("ddp", false, "data parallel: a rank per local GPU, else -ranks CPU ranks (torchrun-style when RANK and WORLD_SIZE are set)")
	ranks := flag.Int("ranks", 2, "in-process CPU ranks of -ddp when no GPU is used")
	exact := flag.Bool("exact", false, "with -ddp on GPUs, the fixed-order all-reduce (the CPU ranks' bits) instead of NCCL's")
	graph := flag.Bool("graph", graphDefault, "capture the training step into a CUDA graph and replay it (on a GPU, eager elsewhere; not with -ddp); -graph clips the gradients on the device in float32 (ClipGradNormDevice), which changes the clipping arithmetic, and so the results, in the last bits; the default is the constant graphDefault")
	flag.Parse()
	if flag.NArg() > 0 {
		log.Fatalf("gpt: unexpected argument %q (flags go before it; see -h)", flag.Arg(0))
	}
	env, group, err := dist.EnvFromOS()
	if err != nil {
		log.Fatal(err)
	}
	d, err := ops.Open(*device)
	if err != nil {
		log.Fatal(err)
	}
	var devs []*ops.Device // the ranks' devices of -ddp in this process
	switch {
	case group: // one rank of a torchrun-style group: its device comes from LOCAL_RANK
		if *device == "auto" { // as dist.Init chooses
			d = ops.CPU()
			if c, err := ops.Open(fmt.Sprintf("cuda:%d", env.LocalRank)); err == nil {
				d = c
			}
		}
	case *ddp:
		if *ranks < 1 {
			log.Fatal("gpt: -ranks must be positive")
		}
		devs = []*ops.Device{d}
		if d.Kind() == ops.KindCUDA && *device == "auto" {
			devs = dist.LocalDevices(1) // every CUDA device
		} else if d.Kind() == ops.KindCPU {
			devs = slices.Repeat([]*ops.Device{d}, *ranks)
		}
		d = devs[0]
	}
	o := defaults(d.Kind() != ops.KindCPU)
	for _, f := range []struct {
		dst *int
		v   int
	}{{&o.Steps, *steps}, {&o.Batch, *batch}, {&o.Seq, *seq}, {&o.Width, *width}, {&o.Heads, *heads},
		{&o.Layers, *layers}, {&o.EvalEvery, *evalEvery}, {&o.StopAfter, *stopAfter}, {&o.ValChars, *valChars}} {
		if f.v != 0 {
			*f.dst = f.v
		}
	}
	if *lr != 0 {
		o.LR = *lr
	}
	if *sample >= 0 {
		o.Sample = *sample
	}
	o.Seed, o.Temperature, o.Prompt, o.Plot, o.Checkpoint = *seed, *temperature, *prompt, *plotPath, *checkpoint
	o.DDP, o.Ranks, o.Exact, o.Graph = *ddp || group, *ranks, *exact, *graph
	if err := o.check(); err != nil {
		log.Fatal(err)
	}

	lead := !group || env.Rank == 0
	if lead {
		fmt.Printf("device: %s", d)
		if sel := ops.DefaultSelection(); *device == "auto" && d.Kind() == ops.KindCPU && sel.Reason != "" {
			fmt.Printf(" (%s)", sel.Reason)
		}
		fmt.Println()
	}
	stopProfile, err := term.StartProfile(*cpuProfile)
	if err != nil {
		log.Fatal(err)
	}
	var res *result
	switch {
	case group:
		res, err = runGroup(env, d, o, os.Stdout)
	case o.DDP:
		var all []*result
		all, err = runLocal(devs, o, os.Stdout)
		if err == nil {
			res = all[0]
		}
	default:
		res, err = run(d, o, os.Stdout)
	}
	if err != nil {
		log.Fatal(err)
	}
	if err := stopProfile(); err != nil {
		log.Fatal(err)
	}
	if !lead {
		return
	}
	if res.sample != "" {
		fmt.Printf("sample (temperature %g):\n%s%s\n", o.Temperature, o.Prompt, res.sample)
	}
	fmt.Println("allocator:", d.Stats())
}

// runLocal trains with one rank per device of devs in this process (dist.RunLocal) and
// returns every rank's result; only rank 0 writes to w, evaluates, plots, saves and samples.
func runLocal(devs []*ops.Device, o options, w io.Writer) ([]*result, error) {
	if w == nil {
		w = io.Discard
	}
	fmt.Fprintf(w, "data parallel: %d ranks on %s, %d windows per rank per step\n", len(devs), devs[0], o.Batch)
	all := make([]*result, len(devs))
	err := dist.RunLocal(devs, dist.RunOptions{Exact: o.Exact}, func(wk *dist.Worker) error {
		res, err := runRank(wk.Device, o, w, wk)
		all[wk.Rank] = res
		return err
	})
	return all, err
}

// runGroup trains as the rank e of a torchrun-style group of processes (dist.Init) on d.
func runGroup(e dist.Env, d *ops.Device, o options, w io.Writer) (*result, error) {
	wk, err := dist.Init(e, d, dist.RunOptions{Exact: o.Exact})
	if err != nil {
		return nil, err
	}
	if wk.Rank == 0 && w != nil {
		fmt.Fprintf(w, "data parallel: rank 0 of %d processes, %d windows per rank per step\n", wk.WorldSize, o.Batch)
	}
	res, err := runRank(wk.Device, o, w, wk)
	return res, errors.Join(err, wk.Close())
}

// check returns an error for settings that cannot run, before any training.
func (o options) check() error {
	switch {
	case o.Steps < 1 || o.Batch < 1 || o.Seq < 1 || o.Width < 1 || o.Heads < 1 || o.Layers < 1 || o.EvalEvery < 1:
		return errors.New("gpt: -steps, -batch, -seq, -d, -heads, -layers and -eval-every must be positive")
	case o.ValChars < 0 || (o.ValChars > 0 && o.ValChars <= o.Seq):
		return fmt.Errorf("gpt: -val-chars must be 0 (all) or more than -seq (%d), to hold a window and its next character", o.Seq)
	case !(o.LR > 0) || math.IsInf(o.LR, 1):
		return errors.New("gpt: -lr must be positive and finite")
	case !(o.Temperature >= 0) || math.IsInf(o.Temperature, 1):
		return errors.New("gpt: -temperature must be >= 0 and finite")
	case o.Warmup < 0 || o.StopAfter < 0:
		return errors.New("gpt: the warm-up and -stop-after must be >= 0")
	case o.Sample < 0:
		return errors.New("gpt: -sample must be >= 0")
	case o.DDP && o.Ranks < 1:
		return errors.New("gpt: -ranks must be positive")
	}
	for _, out := range []string{o.Plot, o.Checkpoint} { // fail before training, not after
		if dir := filepath.Dir(out); out != "" {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return fmt.Errorf("gpt: cannot write %s: %s is not a directory", out, dir)
			}
		}
	}
	return nil
}

// result is what a run leaves: the model's shape and size, the loss curves, the last
// validation loss and the sample.
type result struct {
	cfg     config
	params  int
	curves  curves
	val     float64 // bits per character on the validation split after the last step
	sample  string
	steps   int           // steps run by this call (fewer than -steps when resumed or stopped)
	elapsed time.Duration // their time, evaluations included
	digest  string        // SHA-256 (16 bytes, hex) of the final parameters' bits, in order
}

// Metadata keys of the example's checkpoints.
const (
	metaConfig = "gpt.config" // the model's shape (JSON): a checkpoint of another shape is refused
	metaCurves = "gpt.curves" // the loss curves so far (JSON), for the plot of a resumed run
)

// run trains a model as o says on the device d, writing its progress to w (nil: silent), and
// returns what it learnt. Everything it allocates on d is released before it returns.
func run(d *ops.Device, o options, w io.Writer) (*result, error) { return runRank(d, o, w, nil) }

// runRank is run as the rank wk of a data-parallel group (nil: alone). Rank 0 writes to w,
// evaluates, plots, saves the checkpoint and samples; the other ranks only train (their result
// holds the steps, time and digest).
func runRank(d *ops.Device, o options, w io.Writer, wk *dist.Worker) (res *result, err error) {
	lead, world := wk == nil || wk.Rank == 0, 1
	if wk != nil {
		world = wk.WorldSize
	}
	corpus := text.OpticksCorpus()
	val := corpus.Val
	if o.ValChars > 0 && o.ValChars < len(val) {
		val = val[:o.ValChars]
	}
	cfg := config{Vocab: corpus.Vocab.Size(), Seq: o.Seq, Width: o.Width, Heads: o.Heads, Layers: o.Layers}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	prompt, err := corpus.Vocab.Encode(o.Prompt)
	if err != nil {
		return nil, fmt.Errorf("gpt: -prompt: %w", err)
	}
	if w == nil || !lead {
		w = io.Discard
	}
	fmt.Fprintf(w, "data: Newton's Opticks, %d characters (%d distinct): %d for training, %d for validation\n",
		len(corpus.Train)+len(corpus.Val), cfg.Vocab, len(corpus.Train), len(corpus.Val))
	if len(val) < len(corpus.Val) {
		fmt.Fprintf(w, "validation: the first %d characters (-val-chars)\n", len(val))
	}

	s := autograd.NewSession(autograd.Options{Device: d, Seed: o.Seed})
	defer func() {
		if cerr := s.Close(); cerr != nil && err == nil {
			res, err = nil, cerr
		}
	}()
	m := newGPT(s, cfg)
	res = &result{cfg: cfg, params: nn.NumParameters(m)}
	fmt.Fprintf(w, "model: GPT, %d layers, d %d, %d heads, context %d: %d parameters\n",
		cfg.Layers, cfg.Width, cfg.Heads, cfg.Seq, res.params)
	params := nn.Parameters(m)
	backward := s.Backward
	graph := o.Graph // offer the step to the capture
	if wk != nil {
		if graph {
			fmt.Fprintln(w, "graph: not used with -ddp: the gradients' all-reduces are library calls or host exchanges that a capture refuses, and a refused all-reduce aborts the group; running eagerly")
			graph = false
		}
		ddp, err := dist.New(s, wk.Comm, dist.Options{}) // rank 0's initial parameters everywhere
		if err != nil {
			return nil, err
		}
		backward = ddp.Backward
	}
	ao := autograd.DefaultAdamW()
	ao.LR, ao.Beta2, ao.WeightDecay = o.LR, 0.99, 0.1
	opt := autograd.NewAdamW(params, ao)
	sched, err := schedule(opt, o.Steps, o.Warmup, o.LR/10)
	if err != nil {
		return nil, err
	}
	windows, err := nn.NewTokenWindows(corpus.Train, o.Seq, 1)
	if err != nil {
		return nil, fmt.Errorf("gpt: %w", err)
	}
	// The batches: one loader shuffling every epoch, or, data parallel, a loader per epoch over
	// this rank's shard of the epoch's shuffled order.
	lo := nn.LoaderOptions{BatchSize: o.Batch, Shuffle: true, Seed: o.Seed, DropLast: true, Device: d, Prefetch: 1}
	var loader *nn.Loader
	loaderFor := func(epoch int) (*nn.Loader, error) {
		if wk == nil && loader != nil {
			return loader, nil
		}
		var src nn.Source = windows
		if wk != nil {
			if src, err = dist.NewShard(windows, true, o.Seed, epoch, wk.Rank, wk.WorldSize); err != nil {
				return nil, fmt.Errorf("gpt: %w", err)
			}
			lo.Shuffle = false
		}
		if loader != nil {
			loader.Close()
		}
		if loader, err = nn.NewLoader(src, lo); err != nil {
			return nil, fmt.Errorf("gpt: %w", err)
		}
		return loader, nil
	}
	if _, err := loaderFor(0); err != nil {
		return nil, err
	}
	defer func() { loader.Close() }()
	if err := s.Err(); err != nil {
		return nil, err
	}

	// resume
	configJSON, _ := json.Marshal(cfg)
	ck := nn.Checkpoint{Model: m, Optimizer: opt, Scheduler: sched, Session: s}
	first := 0 // steps done
	if o.Checkpoint != "" {
		switch err := ck.Load(o.Checkpoint); {
		case err == nil:
			if got := ck.Meta[metaConfig]; got != string(configJSON) {
				return nil, fmt.Errorf("gpt: checkpoint %s holds a model %s, not %s", o.Checkpoint, got, configJSON)
			}
			if err := json.Unmarshal([]byte(ck.Meta[metaCurves]), &res.curves); err != nil {
				return nil, fmt.Errorf("gpt: checkpoint %s: curves: %w", o.Checkpoint, err)
			}
			first = ck.Step
			fmt.Fprintf(w, "resumed from %s after step %d\n", o.Checkpoint, first)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	save := func(step int) error {
		curves, err := json.Marshal(res.curves)
		if err != nil {
			return err
		}
		ck.Step, ck.Meta = step, map[string]string{metaConfig: string(configJSON), metaCurves: string(curves)}
		return ck.Save(o.Checkpoint)
	}

	last := o.Steps
	if o.StopAfter > 0 {
		last = min(last, o.StopAfter)
	}
	bar := newProgress(w, last)
	start := time.Now()
	perEpoch := loader.Len()
	if perEpoch == 0 {
		return nil, fmt.Errorf("gpt: %d training windows per rank, fewer than -batch %d", windows.Len()/world, o.Batch)
	}
	sum, n := 0.0, 0                // training bits per character since the last evaluation
	every := max(o.EvalEvery/10, 1) // steps per point of the training curve
	winSum, winN := 0.0, 0
	step := first
	var batch *nn.Batch // the current batch
	var st *static
	if graph {
		if st, err = newStatic(m, o.Batch, o.Seq); err != nil {
			return nil, err
		}
		defer st.release() // after offered.Close
	}
	deviceClip := graph || (o.DeviceClip && wk == nil)
	stepFn := func() (loss autograd.Var, err error) { // one optimizer step on batch, the gradients from backward
		s.Reset()
		loss = m.stepLoss(st, batch)
		if err := backward(loss); err != nil {
			return loss, err
		}
		if err := graphstep.ClipGradNorm(params, 1, deviceClip); err != nil {
			return loss, err
		}
		opt.Step()
		opt.ZeroGrad()
		return loss, nil
	}
	offered := graphstep.NewOfferedLoss(s, stepFn, graph, bar.log) // -graph: offered before the run's second step
	defer offered.Close()
	for step < last {
		if _, err := loaderFor(step / perEpoch); err != nil {
			return nil, err
		}
		for b := range loader.Epoch(step / perEpoch) {
			if b.Index < step%perEpoch { // a resumed run skips the batches done before
				continue
			}
			batch = b
			if st != nil {
				if err := st.load(b); err != nil {
					return nil, err
				}
			}
			if err := offered.Run(); err != nil {
				return nil, err
			}
			l, err := offered.Loss()
			if err != nil {
				return nil, err
			}
			bits := float64(l) / math.Ln2 // this rank's batch, in bits per character
			if err := s.Err(); err != nil {
				return nil, err
			}
			sched.Step()
			step++
			sum, n = sum+bits, n+1
			if winSum, winN = winSum+bits, winN+1; step%every == 0 || step%o.EvalEvery == 0 || step == last {
				res.curves.addTrain(step, winSum/float64(winN))
				winSum, winN = 0, 0
			}
			bar.update(step, func() string {
				return fmt.Sprintf("train %.3f bpc  %s", sum/float64(n), rate(float64((step-first)*world*o.Batch*o.Seq)/time.Since(start).Seconds()))
			})
			if lead && (step%o.EvalEvery == 0 || step == last) {
				val := evaluate(m, val, o.Seq, o.Batch)
				if err := s.Err(); err != nil {
					return nil, err
				}
				res.curves.addVal(step, val)
				bar.log(fmt.Sprintf("step %5d/%d  train %.3f  val %.3f bits/char  lr %.2e  (%s)",
					step, o.Steps, sum/float64(n), val, opt.LR(), time.Since(start).Round(100*time.Millisecond)))
				res.val = val
				sum, n = 0, 0
				if o.Checkpoint != "" {
					if err := save(step); err != nil {
						return nil, err
					}
				}
			}
			if step == last {
				break
			}
		}
		if err := loader.Err(); err != nil {
			return nil, err
		}
	}
	bar.finish()
	res.steps, res.elapsed = step-first, time.Since(start)
	if res.digest, err = digest(params); err != nil {
		return nil, err
	}
	if !lead {
		return res, s.Err()
	}
	if res.steps > 0 {
		fmt.Fprintf(w, "trained %d steps in %s (%s), validation loss %.3f bits per character\n", res.steps,
			res.elapsed.Round(100*time.Millisecond), rate(float64(res.steps*world*o.Batch*o.Seq)/res.elapsed.Seconds()), res.val)
	} else {
		res.val = evaluate(m, val, o.Seq, o.Batch)
		fmt.Fprintf(w, "nothing left to train: validation loss %.3f bits per character\n", res.val)
	}
	if o.Plot != "" && len(res.curves.ValSteps) > 0 {
		if err := res.curves.plot(o.Plot, cfg); err != nil {
			return nil, err
		}
		fmt.Fprintln(w, "plot:", o.Plot)
	}
	if o.Sample > 0 {
		if len(prompt) == 0 {
			prompt, _ = corpus.Vocab.Encode("\n")
		}
		ids := generate(m, prompt, o.Sample, o.Temperature)
		res.sample = corpus.Vocab.Decode(ids)
	}
	return res, s.Err()
}

// schedule returns the learning-rate schedule of a run of steps steps: a linear warm-up from
// 1/100 of the peak over warmup steps (at most half the run; none for 0), then a cosine decay to
// floor over the rest.
func schedule(opt *autograd.Adam, steps, warmup int, floor float64) (nn.Scheduler, error) {
	warmup = min(warmup, steps/2)
	cos, err := nn.NewCosineAnnealingLR(opt, max(steps-warmup, 1), floor)
	if err != nil || warmup < 1 {
		return cos, err
	}
	return nn.NewLinearWarmup(opt, warmup, 0.01, cos)
}

// digest returns the SHA-256 (first 16 bytes, hex) of the parameters' values, in order.
func digest(params []*autograd.Param) (string, error) {
	h := sha256.New()
	for _, p := range params {
		v, err := p.Host()
		if err != nil {
			return "", err
		}
		for _, f := range v {
			binary.Write(h, binary.LittleEndian, math.Float32bits(f))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// graphDefault is -graph's default: off until a GPU measurement shows the captured step faster;
// one line to flip.
const graphDefault = false

// static is the device memory a captured step reads: made once, the batch refilled before each
// step (load).
type static struct {
	vocab, batch, seq int
	tokens, labels    *ops.Indices // batch·seq tokens; the labels' positions (autograd.LabelPositions)
	positions         *ops.Indices // 0 .. seq-1
}

// newStatic makes the static inputs of batches of batch windows of seq characters.
func newStatic(m *gpt, batch, seq int) (*static, error) {
	d := m.s.Device()
	st := &static{vocab: m.cfg.Vocab, batch: batch, seq: seq}
	positions := make([]int, seq)
	for i := range positions {
		positions[i] = i
	}
	var err error
	if st.tokens, err = ops.NewIndices(d, make([]int, batch*seq)); err == nil {
		st.labels, err = ops.NewIndices(d, make([]int, batch*seq))
	}
	if err == nil {
		st.positions, err = ops.NewIndices(d, positions)
	}
	if err != nil {
		st.release()
		return nil, fmt.Errorf("gpt: graph: %w", err)
	}
	return st, nil
}

// load copies the batch b (batch windows of seq characters) into the static inputs (between
// steps).
func (st *static) load(b *nn.Batch) error {
	if len(b.Tokens) != st.batch*st.seq {
		return fmt.Errorf("gpt: graph: a batch of %d tokens, want %d", len(b.Tokens), st.batch*st.seq)
	}
	pos, err := autograd.LabelPositions(b.Labels, st.vocab, false, 0)
	if err == nil {
		err = st.tokens.Update(b.Tokens)
	}
	if err == nil {
		err = st.labels.Update(pos)
	}
	if err != nil {
		return fmt.Errorf("gpt: graph: %w", err)
	}
	return nil
}

func (st *static) release() {
	st.tokens.Release()
	st.labels.Release()
	st.positions.Release()
}

// stepLoss records a training step's loss: on the static inputs st (-graph) when st is not nil,
// else on the host batch b.
func (m *gpt) stepLoss(st *static, b *nn.Batch) autograd.Var {
	s := m.s
	if st != nil {
		return s.CrossEntropyIdx(m.logitsIdx(st.tokens, st.positions, st.batch, st.seq), st.labels)
	}
	return s.CrossEntropy(m.logits(b.Tokens, b.TokensShape[0], b.TokensShape[1]), b.Labels)
}

// evaluate returns the model's loss in bits per character on the tokens val, cut into windows
// of seq characters (each predicting its characters from those before it in the window) read in
// batches of batch windows, without gradients: the mean over every predicted character. It
// returns NaN when val is shorter than a window or after an error (which stays in the session).
func evaluate(m *gpt, val []int, seq, batch int) float64 {
	s := m.s
	windows, err := nn.NewTokenWindows(val, seq, seq)
	if err != nil {
		return math.NaN()
	}
	loader, err := nn.NewLoader(windows, nn.LoaderOptions{BatchSize: batch, Device: s.Device()})
	if err != nil {
		s.Fail(err)
		return math.NaN()
	}
	defer loader.Close()
	nn.Eval(m)
	defer nn.Train(m)
	sum, n := 0.0, 0
	for b := range loader.Epoch(0) {
		s.Reset()
		s.NoGrad(func() {
			loss := s.CrossEntropy(m.logits(b.Tokens, b.Size(), seq), b.Labels)
			sum += float64(s.Item(loss)) * float64(len(b.Labels))
		})
		n += len(b.Labels)
	}
	s.Reset()
	if err := errors.Join(s.Err(), loader.Err()); err != nil {
		s.Fail(err)
		return math.NaN()
	}
	return sum / float64(n) / math.Ln2
}

// generate returns count characters that the model writes after the prompt (non-empty), each
// drawn from the softmax of the last position's logits divided by temperature with the
// session's generator (Session.Multinomial), or the likeliest when temperature is 0. The model
// sees the last cfg.Seq characters at most. It returns what it made before an error, which stays
// in the session.
func generate(m *gpt, prompt []int, count int, temperature float64) []int {
	s := m.s
	ctx := append([]int{}, prompt...)
	out := make([]int, 0, count)
	for range count {
		window := ctx[max(len(ctx)-m.cfg.Seq, 0):]
		s.Reset()
		next := -1
		s.NoGrad(func() {
			t := len(window)
			last := s.Reshape(s.Narrow(m.logits(window, 1, t), 1, t-1, 1), 1, m.cfg.Vocab)
			if temperature == 0 {
				if ids := s.Argmax(last); len(ids) == 1 {
					next = ids[0]
				}
				return
			}
			if ids := s.Multinomial(s.Softmax(s.Scale(last, 1/temperature)), 1, false).Values(); len(ids) == 1 {
				next = ids[0]
			}
		})
		if next < 0 || s.Err() != nil {
			break
		}
		ctx = append(ctx, next)
		out = append(out, next)
	}
	s.Reset()
	return out
}

// curves are the losses in bits per character: the training loss averaged over runs of steps
// (a tenth of the steps between evaluations), and the validation loss at each evaluation.
type curves struct {
	TrainSteps []int     `json:"train_steps"`
	Train      []float64 `json:"train"`
	ValSteps   []int     `json:"val_steps"`
	Val        []float64 `json:"val"`
}

func (c *curves) addTrain(step int, bits float64) {
	c.TrainSteps = append(c.TrainSteps, step)
	c.Train = append(c.Train, bits)
}

func (c *curves) addVal(step int, bits float64) {
	c.ValSteps = append(c.ValSteps, step)
	c.Val = append(c.Val, bits)
}

// plot writes a PNG of the curves, with the 2.0 bits per character line for reference.
func (c *curves) plot(path string, cfg config) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("GPT (%d layers, d %d, %d heads) on Newton's Opticks", cfg.Layers, cfg.Width, cfg.Heads)
	p.X.Label.Text = "step"
	p.Y.Label.Text = "loss (bits per character)"
	p.Add(plotter.NewGrid())
	end := 0
	for _, l := range []struct {
		name   string
		steps  []int
		ys     []float64
		col    color.Color
		points bool
	}{{"training", c.TrainSteps, c.Train, color.RGBA{R: 30, G: 90, B: 200, A: 255}, false},
		{"validation", c.ValSteps, c.Val, color.RGBA{R: 200, G: 30, B: 30, A: 255}, true}} {
		var xy plotter.XYs
		for i, y := range l.ys {
			if !math.IsNaN(y) && !math.IsInf(y, 0) {
				xy = append(xy, plotter.XY{X: float64(l.steps[i]), Y: y})
				end = max(end, l.steps[i])
			}
		}
		if len(xy) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		line.Color, line.Width = l.col, vg.Points(1.5)
		p.Add(line)
		if l.points {
			points.Color, points.Shape = l.col, draw.CircleGlyph{}
			p.Add(points)
		}
		p.Legend.Add(l.name, line)
	}
	if end > 0 {
		ref, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 2}, {X: float64(end), Y: 2}})
		if err != nil {
			return err
		}
		ref.Color, ref.Dashes = color.Gray{Y: 120}, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(ref)
		p.Legend.Add("2 bits per character", ref)
	}
	p.Legend.Top = true
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

// rate formats a throughput in characters per second.
func rate(perSecond float64) string {
	if perSecond >= 1e4 {
		return fmt.Sprintf("%.1fk chars/s", perSecond/1e3)
	}
	return fmt.Sprintf("%.0f chars/s", perSecond)
}

// progress is a one-line progress bar of the training steps. On a terminal it redraws itself in
// place and log prints a line above it; elsewhere (a log file, a pipe, a test) only the logged
// lines appear.
type progress struct {
	w          io.Writer
	total      int
	terminal   bool
	shown      bool
	line       string
	lastUpdate time.Time
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total}
	if f, ok := w.(*os.File); ok {
		fi, err := f.Stat()
		p.terminal = err == nil && fi.Mode()&os.ModeCharDevice != 0
	}
	return p
}

// update redraws the bar (at most 10 times a second) with step of total steps done and the note
// that note returns (called only then).
func (p *progress) update(step int, note func() string) {
	if !p.terminal || time.Since(p.lastUpdate) < 100*time.Millisecond {
		return
	}
	p.lastUpdate = time.Now()
	const width = 30
	fill := min(width*step/max(p.total, 1), width)
	p.line = fmt.Sprintf("step %d/%d [%s%s]  %s", step, p.total, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), note())
	fmt.Fprintf(p.w, "\r\033[K%s", p.line)
	p.shown = true
}

// log prints line, keeping the bar below it on a terminal.
func (p *progress) log(line string) {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, line)
	if p.shown {
		fmt.Fprint(p.w, p.line)
	}
}

// finish removes the bar.
func (p *progress) finish() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
	p.shown = false
}
