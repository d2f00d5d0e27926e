// Command fashionmnist trains a multilayer perceptron (784-256-10, ReLU) or, with -model cnn,
// a small convolutional network (3x3 convolutions of 16 and 32 channels, each with a ReLU and
// 2x2 max pooling, then 1568-128-10 with dropout) to classify Fashion-MNIST clothing images with
// the nn module layer and minibatch SGD whose learning rate decays linearly to 0, on the CPU or a
// CUDA device. It prints the test accuracy after each epoch and at the end, and plots the
// training loss to a PNG file.
//
//	go run ./examples/fashionmnist                    # default device, embedded subset or full set
//	go run ./examples/fashionmnist -device cpu -epochs 5
//	go run ./examples/fashionmnist -model cnn         # the CNN (slower; more accurate)
//	go run ./examples/fashionmnist -data DIR          # IDX files (train-*, t10k-*; .gz or plain)
//	go run ./examples/fashionmnist -checkpoint run.safetensors -stop-after 5   # then again to resume
//	go run ./examples/fashionmnist -graph             # each step one CUDA graph launch (GPU)
//
// Without -data it uses the full data set when Debian's dataset-fashion-mnist package is
// installed (60,000 training and 10,000 test images), else a class-balanced subset embedded in
// the binary (10,000 and 2,000).
package main

import (
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io/fs"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep"
	"github.com/torchlean-go/torchlean/examples/internal/term"
	"github.com/torchlean-go/torchlean/ops"
)

// cnnDefaults are -model cnn's values of the flags that the user does not set (the others keep
// the MLP's defaults); chosen so that the embedded subset trains in a few minutes on two CPU
// cores (README.md has the measurements).
var cnnDefaults = struct {
	epochs       int
	lr, momentum float64
	hidden       string
	channels     string
	dropout      float64
}{epochs: 10, lr: 0.05, momentum: 0.9, hidden: "128", channels: "16,32", dropout: 0.25}

func main() {
	device := flag.String("device", "auto", "cpu, cuda, cuda:N or auto (CUDA when usable)")
	modelKind := flag.String("model", "mlp", "mlp (a multilayer perceptron) or cnn (a small convolutional network)")
	dataDir := flag.String("data", "", "directory of Fashion-MNIST IDX files, or \"embedded\" (default: "+DebianDir+" when installed, else the embedded subset)")
	epochs := flag.Int("epochs", 20, "passes over the training set (-model cnn: "+strconv.Itoa(cnnDefaults.epochs)+" unless set)")
	batch := flag.Int("batch", 64, "minibatch size")
	hidden := flag.String("hidden", "256", "widths of the hidden layers, comma separated (-model cnn: the fully connected ones after the convolutions, "+cnnDefaults.hidden+" unless set)")
	lr := flag.Float64("lr", 0.1, "initial SGD learning rate (decays linearly to 0 over the training; -model cnn: "+fmt.Sprint(cnnDefaults.lr)+" unless set)")
	momentum := flag.Float64("momentum", 0, "SGD momentum (-model cnn: "+fmt.Sprint(cnnDefaults.momentum)+" unless set)")
	channels := flag.String("channels", cnnDefaults.channels, "-model cnn: output channels of the convolutions, comma separated (each followed by a ReLU and a 2x2 max pooling)")
	dropout := flag.Float64("dropout", cnnDefaults.dropout, "-model cnn: dropout probability after each fully connected hidden layer, in [0, 1)")
	seed := flag.Uint64("seed", 1, "random seed (initialization and shuffling)")
	plotPath := flag.String("plot", "loss.png", "PNG file for the loss curve (empty: none)")
	save := flag.String("save", "", "safetensors file for the trained parameters (empty: none)")
	checkpoint := flag.String("checkpoint", "", "safetensors file saved after every epoch and resumed from when it exists (empty: none)")
	stopAfter := flag.Int("stop-after", 0, "stop after this epoch (0: run every epoch), to resume later from -checkpoint")
	cpuProfile := flag.String("cpuprofile", "", "file for a CPU profile of the training epochs (go tool pprof; empty: none)")
	graph := flag.Bool("graph", graphDefault, "capture the training step into a CUDA graph and replay it (on a GPU; on the CPU the same steps run eagerly, with the same results; the default is the constant graphDefault in graph.go)")
	flag.Parse()
	if flag.NArg() > 0 {
		log.Fatalf("fashionmnist: unexpected argument %q (flags go before it; see -h)", flag.Arg(0))
	}
	for _, out := range []string{*plotPath, *save, *checkpoint, *cpuProfile} { // fail before training, not after
		if dir := filepath.Dir(out); out != "" {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				log.Fatalf("fashionmnist: cannot write %s: %s is not a directory", out, dir)
			}
		}
	}
	switch *modelKind {
	case "mlp":
	case "cnn": // the CNN's defaults for the flags not given
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["epochs"] {
			*epochs = cnnDefaults.epochs
		}
		if !set["hidden"] {
			*hidden = cnnDefaults.hidden
		}
		if !set["lr"] {
			*lr = cnnDefaults.lr
		}
		if !set["momentum"] {
			*momentum = cnnDefaults.momentum
		}
	default:
		log.Fatalf("fashionmnist: bad -model %q (want mlp or cnn)", *modelKind)
	}
	sizes := []int{0}
	for _, f := range strings.Split(*hidden, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			log.Fatalf("fashionmnist: bad -hidden %q", *hidden)
		}
		sizes = append(sizes, n)
	}
	var convs []int
	for _, f := range strings.Split(*channels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if (err != nil || n < 1) && *modelKind == "cnn" {
			log.Fatalf("fashionmnist: bad -channels %q", *channels)
		}
		convs = append(convs, n)
	}
	if *epochs < 1 || *batch < 1 || !(*lr > 0) || math.IsInf(*lr, 1) || !(*momentum >= 0 && *momentum < 1) {
		log.Fatal("fashionmnist: -epochs, -batch and -lr must be positive (and -lr finite), -momentum in [0, 1)")
	}
	if !(*dropout >= 0 && *dropout < 1) {
		log.Fatal("fashionmnist: -dropout must be in [0, 1)")
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
	train, test, source, err := loadData(*dataDir, embeddedSubset())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("data: %s: %d training and %d test images of %dx%d pixels\n", source, train.Len(), test.Len(), train.Rows, train.Cols)
	if train.Len() == 0 || test.Len() == 0 {
		log.Fatal("fashionmnist: the training and the test set must not be empty")
	}

	sizes[0] = train.Pixels()
	sizes = append(sizes, len(Classes))
	sess := autograd.NewSession(autograd.Options{Device: d, Seed: *seed})
	var model nn.Layer // PyTorch's layers and default initialization
	title := "Fashion-MNIST MLP: training loss"
	if *modelKind == "cnn" {
		model = newCNN(sess, train.Rows, train.Cols, convs, sizes[1:len(sizes)-1], *dropout, len(Classes))
		title = "Fashion-MNIST CNN: training loss"
	} else {
		model = nn.NewMLP(sess, sizes, nn.MLPOptions{})
	}
	if err := sess.Err(); err != nil {
		log.Fatal(err)
	}
	opt := autograd.NewSGD(nn.Parameters(model), autograd.SGDOptions{LR: *lr, Momentum: *momentum})
	trainLoader, err := loader(train, *batch, true, *seed, d)
	if err != nil {
		log.Fatal(err)
	}
	testLoader, err := loader(test, 1000, false, 0, d)
	if err != nil {
		log.Fatal(err)
	}
	steps := trainLoader.Len()
	sched, err := nn.NewLinearLR(opt, 1, 0, *epochs*steps) // linear decay to 0 over the run
	if err != nil {
		log.Fatal(err)
	}
	ck := nn.Checkpoint{Model: model, Optimizer: opt, Scheduler: sched, Session: sess}
	first := 1 // the first epoch to run
	if *checkpoint != "" {
		switch err := ck.Load(*checkpoint); {
		case err == nil:
			first = ck.Step + 1
			fmt.Printf("resumed from %s after epoch %d\n", *checkpoint, ck.Step)
		case !errors.Is(err, fs.ErrNotExist):
			log.Fatal(err)
		}
	}
	var losses []float64 // one per step
	var acc float64      // test accuracy after the last epoch
	stopProfile, err := term.StartProfile(*cpuProfile)
	if err != nil {
		log.Fatal(err)
	}
	eager := func(b *nn.Batch) float64 { return step(sess, model, opt, b) }
	var graphed *graphstep.Steps // -graph: the captured steps
	if *graph {
		graphed = newGraphSteps(sess, model, opt, len(Classes))
	}
	start := time.Now()
	last := *epochs
	if *stopAfter > 0 {
		last = min(last, *stopAfter)
	}
	for epoch := first; epoch <= last; epoch++ {
		bar := term.NewProgress(fmt.Sprintf("epoch %d/%d", epoch, *epochs), steps)
		sum := 0.0
		for b := range trainLoader.Epoch(epoch - 1) {
			l, err := graphstep.RunStep(graphed, b, eager)
			if err != nil {
				log.Fatal(err)
			}
			sched.Step()
			losses = append(losses, l)
			sum += l
			bar.Update(b.Index+1, func() string { return fmt.Sprintf("loss %.4f", sum/float64(b.Index+1)) })
		}
		acc = accuracy(sess, model, testLoader)
		if err := errors.Join(sess.Err(), trainLoader.Err(), testLoader.Err()); err != nil {
			log.Fatal(err)
		}
		bar.Done(fmt.Sprintf("loss %.4f  test accuracy %.1f%%  (%s)", sum/float64(steps), 100*acc, time.Since(start).Round(100*time.Millisecond)))
		if *checkpoint != "" {
			ck.Step = epoch
			if err := ck.Save(*checkpoint); err != nil {
				log.Fatal(err)
			}
		}
	}
	if graphed != nil {
		if line := graphed.Report(); line != "" {
			fmt.Println(line)
		}
		if err := graphed.Close(); err != nil {
			log.Fatal(err)
		}
	}
	if bad := len(losses) - len(finite(losses)); bad > 0 {
		fmt.Printf("warning: %d of %d steps had a non-finite loss: the training diverged (try a lower -lr or -momentum)\n", bad, len(losses))
	}
	elapsed := time.Since(start)
	if err := stopProfile(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("test accuracy: %.1f%%\n", 100*acc)
	fmt.Printf("training time: %s (%s of %s)\n", elapsed.Round(time.Millisecond),
		plural(max(last-first+1, 0), "epoch"), plural(steps, "step"))
	if *save != "" { // before the plot: a failed plot keeps the trained parameters
		if err := nn.SaveWeights(*save, model); err != nil {
			log.Fatal(err)
		}
		fmt.Println("parameters:", *save)
	}
	if *plotPath != "" {
		switch err := plotLoss(*plotPath, title, losses, steps); {
		case errors.Is(err, errNoFiniteLoss):
			fmt.Println("loss curve: not drawn (no finite loss)")
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Println("loss curve:", *plotPath)
		}
	}
	opt.Close()
	trainLoader.Close()
	testLoader.Close()
	if err := sess.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("allocator:", d.Stats())
}

// loader returns a loader of ds's images (flat rows of pixels) and labels in batches of size
// batch on the device d, shuffled by seed and the epoch when shuffle is set; the next batch is
// assembled and uploaded while the current step runs.
func loader(ds *Dataset, batch int, shuffle bool, seed uint64, d *ops.Device) (*nn.Loader, error) {
	src, err := nn.NewTensorSource(nn.Layout{Features: []int{ds.Pixels()}, Labels: []int{}}, ds.Images, nil, ds.Labels)
	if err != nil {
		return nil, err
	}
	return nn.NewLoader(src, nn.LoaderOptions{BatchSize: batch, Shuffle: shuffle, Seed: seed, Device: d, Prefetch: 1})
}

// step runs one optimizer step on the batch b and returns its loss (errors stay in the session).
func step(sess *autograd.Session, model nn.Layer, opt *autograd.SGD, b *nn.Batch) float64 {
	sess.Reset()
	loss := sess.CrossEntropy(model.Forward(sess.Const(b.X, b.XShape)), b.Labels)
	sess.Backward(loss)
	opt.Step()
	opt.ZeroGrad()
	return float64(sess.Item(loss))
}

// accuracy returns the fraction of the loader's examples that model classifies correctly (the
// largest logit is the label), in evaluation mode and without gradients.
func accuracy(sess *autograd.Session, model nn.Layer, test *nn.Loader) float64 {
	nn.Eval(model)
	defer nn.Train(model)
	correct, total := 0, 0
	for b := range test.Epoch(0) {
		sess.Reset()
		var pred []int
		sess.NoGrad(func() { pred = sess.Argmax(model.Forward(sess.Const(b.X, b.XShape))) })
		for k, p := range pred {
			if p == b.Labels[k] {
				correct++
			}
		}
		total += b.Size()
	}
	sess.Reset()
	return float64(correct) / float64(max(total, 1))
}

// errNoFiniteLoss: every loss was NaN or infinite (a diverged training), nothing to draw.
var errNoFiniteLoss = errors.New("no finite loss to plot")

// finite returns the finite values of xs.
func finite(xs []float64) []float64 {
	return slices.DeleteFunc(slices.Clone(xs), func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) })
}

// plotLoss writes a PNG plot titled title of the minibatch losses against the epoch, with the
// mean of each tenth of an epoch drawn over the raw values (the finite ones; errNoFiniteLoss
// when there are none).
func plotLoss(path, title string, losses []float64, stepsPerEpoch int) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "epoch"
	p.Y.Label.Text = "cross-entropy"
	var raw, smooth plotter.XYs
	for i, l := range losses {
		if !math.IsNaN(l) && !math.IsInf(l, 0) {
			raw = append(raw, plotter.XY{X: float64(i+1) / float64(stepsPerEpoch), Y: l})
		}
	}
	if len(raw) == 0 {
		return errNoFiniteLoss
	}
	w := max(stepsPerEpoch/10, 1)
	for lo := 0; lo < len(losses); lo += w {
		hi := min(lo+w, len(losses))
		if f := finite(losses[lo:hi]); len(f) > 0 {
			s := 0.0
			for _, l := range f {
				s += l
			}
			smooth = append(smooth, plotter.XY{X: float64(hi) / float64(stepsPerEpoch), Y: s / float64(len(f))})
		}
	}
	rawLine, err := plotter.NewLine(raw)
	if err != nil {
		return err
	}
	rawLine.Color = color.Gray{Y: 140}
	rawLine.Width = vg.Points(0.6)
	smoothLine, err := plotter.NewLine(smooth)
	if err != nil {
		return err
	}
	smoothLine.Width = vg.Points(2)
	smoothLine.Color = color.RGBA{R: 200, G: 30, B: 30, A: 255}
	p.Add(plotter.NewGrid(), rawLine, smoothLine)
	p.Legend.Add("minibatch", rawLine)
	p.Legend.Add(fmt.Sprintf("mean of %d steps", w), smoothLine)
	p.Legend.Top = true
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

// plural returns "1 epoch", "2 epochs" and so on.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
