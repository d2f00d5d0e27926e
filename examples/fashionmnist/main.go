// Command fashionmnist trains a multilayer perceptron (784-256-10, ReLU) to classify
// Fashion-MNIST clothing images with the autograd tape and plain minibatch SGD, on the CPU or a
// CUDA device. It prints the test accuracy after each epoch and at the end, and plots the
// training loss to a PNG file.
//
//	go run ./examples/fashionmnist                    # default device, embedded subset or full set
//	go run ./examples/fashionmnist -device cpu -epochs 5
//	go run ./examples/fashionmnist -data DIR          # IDX files (train-*, t10k-*; .gz or plain)
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
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

func main() {
	device := flag.String("device", "auto", "cpu, cuda, cuda:N or auto (CUDA when usable)")
	dataDir := flag.String("data", "", "directory of Fashion-MNIST IDX files, or \"embedded\" (default: "+DebianDir+" when installed, else the embedded subset)")
	epochs := flag.Int("epochs", 20, "passes over the training set")
	batch := flag.Int("batch", 64, "minibatch size")
	hidden := flag.String("hidden", "256", "widths of the hidden layers, comma separated")
	lr := flag.Float64("lr", 0.1, "initial SGD learning rate (decays linearly to 0 over the training)")
	momentum := flag.Float64("momentum", 0, "SGD momentum")
	seed := flag.Uint64("seed", 1, "random seed (initialization and shuffling)")
	plotPath := flag.String("plot", "loss.png", "PNG file for the loss curve (empty: none)")
	save := flag.String("save", "", "safetensors file for the trained parameters (empty: none)")
	cpuProfile := flag.String("cpuprofile", "", "file for a CPU profile of the training epochs (go tool pprof; empty: none)")
	flag.Parse()
	if flag.NArg() > 0 {
		log.Fatalf("fashionmnist: unexpected argument %q (flags go before it; see -h)", flag.Arg(0))
	}
	for _, out := range []string{*plotPath, *save, *cpuProfile} { // fail before training, not after
		if dir := filepath.Dir(out); out != "" {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				log.Fatalf("fashionmnist: cannot write %s: %s is not a directory", out, dir)
			}
		}
	}
	sizes := []int{0}
	for _, f := range strings.Split(*hidden, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			log.Fatalf("fashionmnist: bad -hidden %q", *hidden)
		}
		sizes = append(sizes, n)
	}
	if *epochs < 1 || *batch < 1 || !(*lr > 0) || math.IsInf(*lr, 1) || !(*momentum >= 0 && *momentum < 1) {
		log.Fatal("fashionmnist: -epochs, -batch and -lr must be positive (and -lr finite), -momentum in [0, 1)")
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
	m, err := newMLP(sess, sizes, *seed)
	if err != nil {
		log.Fatal(err)
	}
	opt := autograd.NewSGD(sess.Params(), autograd.SGDOptions{LR: *lr, Momentum: *momentum})
	// The images go to the device once; a minibatch is then a gather there (see onDevice).
	trainSet, err := onDevice(d, train)
	if err != nil {
		log.Fatal(err)
	}
	testSet, err := onDevice(d, test)
	if err != nil {
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(*seed, 0))
	steps := (train.Len() + *batch - 1) / *batch
	var losses []float64 // one per step
	var acc float64      // test accuracy after the last epoch
	stopProfile, err := startProfile(*cpuProfile)
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	for epoch := 1; epoch <= *epochs; epoch++ {
		perm := rng.Perm(train.Len())
		bar := newProgress(fmt.Sprintf("epoch %d/%d", epoch, *epochs), steps)
		sum := 0.0
		for s := range steps {
			idx := perm[s**batch : min((s+1)**batch, len(perm))]
			frac := float64((epoch-1)*steps+s) / float64(*epochs*steps)
			opt.SetLR(*lr * (1 - frac)) // linear decay to 0
			loss := m.step(sess, opt, trainSet, idx)
			losses = append(losses, loss)
			sum += loss
			bar.update(s+1, func() string { return fmt.Sprintf("loss %.4f", sum/float64(s+1)) })
		}
		acc = m.accuracy(sess, testSet)
		if err := sess.Err(); err != nil {
			log.Fatal(err)
		}
		bar.done(fmt.Sprintf("loss %.4f  test accuracy %.1f%%  (%s)", sum/float64(steps), 100*acc, time.Since(start).Round(100*time.Millisecond)))
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
		plural(*epochs, "epoch"), plural(steps, "step"))
	if *save != "" { // before the plot: a failed plot keeps the trained parameters
		meta := map[string]string{"model": "mlp " + fmt.Sprint(sizes), "epochs": strconv.Itoa(*epochs),
			"test_accuracy": fmt.Sprintf("%.4f", acc)}
		if err := autograd.SaveTensorsFile(*save, m.tensors(), meta); err != nil {
			log.Fatal(err)
		}
		fmt.Println("parameters:", *save)
	}
	if *plotPath != "" {
		switch err := plotLoss(*plotPath, losses, steps); {
		case errors.Is(err, errNoFiniteLoss):
			fmt.Println("loss curve: not drawn (no finite loss)")
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Println("loss curve:", *plotPath)
		}
	}
	opt.Close()
	trainSet.Release()
	testSet.Release()
	if err := sess.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("allocator:", d.Stats())
}

// mlp is a multilayer perceptron: dense layers with ReLU between them, logits out.
type mlp struct {
	params []*autograd.Param // weight (out, in) and bias (out) of each layer in turn
	labels []int             // the labels of the current minibatch (reused from step to step)
}

// newMLP creates the parameters of an MLP with the given widths (input to output) in sess: the
// weights He-normal (standard deviation sqrt(2/fan_in)) from the counter-based generator, drawn
// on the CPU so that every device starts from the same bits, and the biases 0. Parameters are
// named like PyTorch's nn.Sequential of Linear layers ("layer1.weight", "layer1.bias", ...).
func newMLP(sess *autograd.Session, sizes []int, seed uint64) (*mlp, error) {
	m := &mlp{}
	for l := 1; l < len(sizes); l++ {
		in, out := sizes[l-1], sizes[l]
		w, err := ops.RandNormal(ops.CPU(), out*in, 0, math.Sqrt(2/float64(in)), ops.KeyOf(seed, uint64(l)))
		if err != nil {
			return nil, err
		}
		values, err := w.Float32s()
		w.Release()
		if err != nil {
			return nil, err
		}
		m.params = append(m.params,
			sess.Param(fmt.Sprintf("layer%d.weight", l), []int{out, in}, values),
			sess.Param(fmt.Sprintf("layer%d.bias", l), []int{out}, nil))
	}
	return m, sess.Err()
}

// tensors returns the parameters by name, for checkpoints.
func (m *mlp) tensors() map[string]autograd.NamedTensor {
	ts := map[string]autograd.NamedTensor{}
	for _, p := range m.params {
		ts[p.Name()] = autograd.NamedTensor{Shape: p.Shape(), Buf: p.Value()}
	}
	return ts
}

// deviceSet is a data set whose images are also on a device, uploaded once as one (Len,
// Pixels) buffer: a minibatch is then a gather of its rows there, one copy on the device, instead
// of assembling it on the host and uploading it every step.
type deviceSet struct {
	*Dataset
	images *ops.Buffer
}

// onDevice uploads the images of ds to d.
func onDevice(d *ops.Device, ds *Dataset) (*deviceSet, error) {
	b, err := ops.FromFloat32(d, ds.Images)
	if err != nil {
		return nil, err
	}
	return &deviceSet{Dataset: ds, images: b}, nil
}

// Release releases the device copy of the images.
func (ds *deviceSet) Release() { ds.images.Release() }

// input records all the images of ds as a constant (Len, Pixels) of the session's current step.
func (ds *deviceSet) input(sess *autograd.Session) autograd.Var {
	return sess.Const(ds.images, []int{ds.Len(), ds.Pixels()})
}

// forward records the logits of the rows of the images x (n, pixels) on the session's current
// step.
func (m *mlp) forward(sess *autograd.Session, x autograd.Var) autograd.Var {
	h := x
	for l := 0; l < len(m.params); l += 2 {
		if l > 0 {
			h = sess.Relu(h)
		}
		h = sess.Linear(h, sess.Use(m.params[l]), sess.Use(m.params[l+1]))
	}
	return h
}

// step runs one optimizer step on the images idx of ds and returns the minibatch loss (errors
// stay in the session).
func (m *mlp) step(sess *autograd.Session, opt *autograd.SGD, ds *deviceSet, idx []int) float64 {
	sess.Reset()
	m.labels = m.labels[:0]
	for _, i := range idx {
		m.labels = append(m.labels, ds.Labels[i])
	}
	loss := sess.CrossEntropy(m.forward(sess, sess.Gather(ds.input(sess), idx)), m.labels)
	sess.Backward(loss)
	opt.Step()
	opt.ZeroGrad()
	return float64(sess.Item(loss))
}

// accuracy returns the fraction of ds classified correctly (the largest logit is the label).
func (m *mlp) accuracy(sess *autograd.Session, ds *deviceSet) float64 {
	const chunk = 1000
	correct := 0
	for lo := 0; lo < ds.Len(); lo += chunk {
		n := min(chunk, ds.Len()-lo)
		sess.Reset()
		var pred []int
		sess.NoGrad(func() { pred = sess.Argmax(m.forward(sess, sess.Slice(ds.input(sess), lo, n))) })
		if pred == nil {
			return 0
		}
		for k, p := range pred {
			if p == ds.Labels[lo+k] {
				correct++
			}
		}
	}
	sess.Reset()
	return float64(correct) / float64(ds.Len())
}

// progress is a one-line text progress bar. On a terminal it redraws itself in place; elsewhere
// (a log, a pipe) it prints only the final line.
type progress struct {
	label      string
	total      int
	terminal   bool
	lastUpdate time.Time
}

func newProgress(label string, total int) *progress {
	fi, err := os.Stdout.Stat()
	return &progress{label: label, total: total, terminal: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

func (p *progress) line(done int, note string) string {
	const width = 30
	fill := width * done / max(p.total, 1)
	return fmt.Sprintf("%s [%s%s] %3d%%  %s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), 100*done/max(p.total, 1), note)
}

// update redraws the bar (at most 10 times a second) with done of total steps finished and the
// note that note returns (called only then).
func (p *progress) update(done int, note func() string) {
	if !p.terminal || (time.Since(p.lastUpdate) < 100*time.Millisecond && done < p.total) {
		return
	}
	p.lastUpdate = time.Now()
	fmt.Printf("\r\033[K%s", p.line(done, note()))
}

// done prints the finished bar with a final note and ends the line.
func (p *progress) done(note string) {
	if p.terminal {
		fmt.Print("\r\033[K")
	}
	fmt.Println(p.line(p.total, note))
}

// errNoFiniteLoss: every loss was NaN or infinite (a diverged training), nothing to draw.
var errNoFiniteLoss = errors.New("no finite loss to plot")

// finite returns the finite values of xs.
func finite(xs []float64) []float64 {
	return slices.DeleteFunc(slices.Clone(xs), func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) })
}

// plotLoss writes a PNG plot of the minibatch losses against the epoch, with the mean of each
// tenth of an epoch drawn over the raw values (the finite ones; errNoFiniteLoss when there are
// none).
func plotLoss(path string, losses []float64, stepsPerEpoch int) error {
	p := plot.New()
	p.Title.Text = "Fashion-MNIST MLP: training loss"
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

// startProfile starts a CPU profile written to path (none when path is empty) and returns the
// function that stops it and closes the file.
func startProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// plural returns "1 epoch", "2 epochs" and so on.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
