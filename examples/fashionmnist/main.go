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
	"flag"
	"fmt"
	"image/color"
	"log"
	"math"
	"math/rand/v2"
	"os"
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
	seed := flag.Uint64("seed", 1, "random seed (initialization and shuffling)")
	plotPath := flag.String("plot", "loss.png", "PNG file for the loss curve (empty: none)")
	save := flag.String("save", "", "safetensors file for the trained parameters (empty: none)")
	flag.Parse()
	sizes := []int{0}
	for _, f := range strings.Split(*hidden, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			log.Fatalf("fashionmnist: bad -hidden %q", *hidden)
		}
		sizes = append(sizes, n)
	}
	if *epochs < 1 || *batch < 1 || *lr <= 0 {
		log.Fatal("fashionmnist: -epochs, -batch and -lr must be positive")
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

	sizes[0] = train.Pixels()
	sizes = append(sizes, len(Classes))
	m, err := newMLP(d, sizes, *seed)
	if err != nil {
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(*seed, 0))
	tp := autograd.NewTape(d)
	steps := (train.Len() + *batch - 1) / *batch
	var losses []float64 // one per step
	var acc float64      // test accuracy after the last epoch
	start := time.Now()
	for epoch := 1; epoch <= *epochs; epoch++ {
		perm := rng.Perm(train.Len())
		bar := newProgress(fmt.Sprintf("epoch %d/%d", epoch, *epochs), steps)
		sum := 0.0
		for s := range steps {
			idx := perm[s**batch : min((s+1)**batch, len(perm))]
			frac := float64((epoch-1)*steps+s) / float64(*epochs*steps)
			loss, err := m.step(tp, train, idx, *lr*(1-frac))
			if err != nil {
				log.Fatal(err)
			}
			losses = append(losses, loss)
			sum += loss
			bar.update(s+1, fmt.Sprintf("loss %.4f", sum/float64(s+1)))
		}
		if acc, err = m.accuracy(tp, test); err != nil {
			log.Fatal(err)
		}
		bar.done(fmt.Sprintf("loss %.4f  test accuracy %.1f%%  (%s)", sum/float64(steps), 100*acc, time.Since(start).Round(100*time.Millisecond)))
	}
	fmt.Printf("test accuracy: %.1f%%\n", 100*acc)
	fmt.Printf("training time: %s (%d epochs of %d steps)\n", time.Since(start).Round(100*time.Millisecond), *epochs, steps)
	if *plotPath != "" {
		if err := plotLoss(*plotPath, losses, steps); err != nil {
			log.Fatal(err)
		}
		fmt.Println("loss curve:", *plotPath)
	}
	if *save != "" {
		meta := map[string]string{"model": "mlp " + fmt.Sprint(sizes), "epochs": strconv.Itoa(*epochs),
			"test_accuracy": fmt.Sprintf("%.4f", acc)}
		if err := autograd.SaveTensorsFile(*save, m.tensors(), meta); err != nil {
			log.Fatal(err)
		}
		fmt.Println("parameters:", *save)
	}
	m.release()
	fmt.Println("allocator:", d.Stats())
}

// mlp is a multilayer perceptron: dense layers with ReLU between them, logits out.
type mlp struct {
	params []*ops.Buffer // weight (out, in) and bias (out) of each layer in turn
	shapes [][]int
}

// newMLP initializes the weights with He-normal values (standard deviation sqrt(2/fan_in)) from
// the counter-based generator, so every device starts from the same bits, and the biases with 0.
// sizes lists the widths from the input to the output.
func newMLP(d *ops.Device, sizes []int, seed uint64) (*mlp, error) {
	m := &mlp{}
	for l := 1; l < len(sizes); l++ {
		in, out := sizes[l-1], sizes[l]
		w, err := ops.RandNormal(d, out*in, 0, math.Sqrt(2/float64(in)), ops.KeyOf(seed, uint64(l)))
		if err != nil {
			m.release()
			return nil, err
		}
		b, err := ops.Zeros(d, out)
		if err != nil {
			w.Release()
			m.release()
			return nil, err
		}
		m.params = append(m.params, w, b)
		m.shapes = append(m.shapes, []int{out, in}, []int{out})
	}
	return m, nil
}

// tensors returns the parameters by name ("layer1.weight", "layer1.bias", ...), for checkpoints.
func (m *mlp) tensors() map[string]autograd.NamedTensor {
	ts := map[string]autograd.NamedTensor{}
	for i, p := range m.params {
		kind := [2]string{"weight", "bias"}[i%2]
		ts[fmt.Sprintf("layer%d.%s", i/2+1, kind)] = autograd.NamedTensor{Shape: m.shapes[i], Buf: p}
	}
	return ts
}

func (m *mlp) release() {
	for _, p := range m.params {
		p.Release()
	}
}

// forward records the logits of the images idx of ds on tp; it returns the parameter handles,
// the logits and the input buffer (the caller releases it after tp.Reset).
func (m *mlp) forward(tp *autograd.Tape, ds *Dataset, idx []int, requiresGrad bool) ([]autograd.Var, autograd.Var, *ops.Buffer, error) {
	p := ds.Pixels()
	x := make([]float32, 0, len(idx)*p)
	for _, i := range idx {
		x = append(x, ds.Images[i*p:(i+1)*p]...)
	}
	xb, err := ops.FromFloat32(tp.Device(), x)
	if err != nil {
		return nil, autograd.Var{}, nil, err
	}
	vs := make([]autograd.Var, len(m.params))
	for i, b := range m.params {
		vs[i] = tp.Leaf(b, m.shapes[i], requiresGrad)
	}
	h := tp.Const(xb, []int{len(idx), p})
	for l := 0; l < len(vs); l += 2 {
		if l > 0 {
			h = tp.Relu(h)
		}
		h = tp.Linear(h, vs[l], vs[l+1])
	}
	return vs, h, xb, nil
}

// step runs one SGD step on the images idx of ds and returns the minibatch loss.
func (m *mlp) step(tp *autograd.Tape, ds *Dataset, idx []int, lr float64) (float64, error) {
	vs, logits, xb, err := m.forward(tp, ds, idx, true)
	if err != nil {
		return 0, err
	}
	defer xb.Release()
	defer tp.Reset()
	labels := make([]int, len(idx))
	for k, i := range idx {
		labels[k] = ds.Labels[i]
	}
	loss := tp.CrossEntropy(logits, labels)
	if err := tp.BackwardParams(loss, vs...); err != nil {
		return 0, err
	}
	l, err := tp.Value(loss).Float32s()
	if err != nil {
		return 0, err
	}
	for i, p := range m.params {
		np, err := ops.Axpy(p, tp.Grad(vs[i]), -lr) // p - lr·dL/dp
		if err != nil {
			return 0, err
		}
		p.Release()
		m.params[i] = np
	}
	return float64(l[0]), nil
}

// accuracy returns the fraction of ds classified correctly (the largest logit is the label).
func (m *mlp) accuracy(tp *autograd.Tape, ds *Dataset) (float64, error) {
	const chunk = 1000
	correct := 0
	for lo := 0; lo < ds.Len(); lo += chunk {
		idx := make([]int, min(chunk, ds.Len()-lo))
		for k := range idx {
			idx[k] = lo + k
		}
		_, logits, xb, err := m.forward(tp, ds, idx, false)
		if err != nil {
			return 0, err
		}
		if err := tp.Err(); err != nil {
			return 0, err
		}
		out, err := tp.Value(logits).Float32s()
		tp.Reset()
		xb.Release()
		if err != nil {
			return 0, err
		}
		c := len(Classes)
		for k, i := range idx {
			row := out[k*c : (k+1)*c]
			if slices.Index(row, slices.Max(row)) == ds.Labels[i] {
				correct++
			}
		}
	}
	return float64(correct) / float64(ds.Len()), nil
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

// update redraws the bar (at most 10 times a second) with done of total steps finished.
func (p *progress) update(done int, note string) {
	if !p.terminal || (time.Since(p.lastUpdate) < 100*time.Millisecond && done < p.total) {
		return
	}
	p.lastUpdate = time.Now()
	fmt.Printf("\r\033[K%s", p.line(done, note))
}

// done prints the finished bar with a final note and ends the line.
func (p *progress) done(note string) {
	if p.terminal {
		fmt.Print("\r\033[K")
	}
	fmt.Println(p.line(p.total, note))
}

// plotLoss writes a PNG plot of the minibatch losses against the epoch, with the mean of each
// tenth of an epoch drawn over the raw values.
func plotLoss(path string, losses []float64, stepsPerEpoch int) error {
	p := plot.New()
	p.Title.Text = "Fashion-MNIST MLP: training loss"
	p.X.Label.Text = "epoch"
	p.Y.Label.Text = "cross-entropy"
	raw := make(plotter.XYs, len(losses))
	for i, l := range losses {
		raw[i] = plotter.XY{X: float64(i+1) / float64(stepsPerEpoch), Y: l}
	}
	var smooth plotter.XYs
	w := max(stepsPerEpoch/10, 1)
	for lo := 0; lo < len(losses); lo += w {
		hi := min(lo+w, len(losses))
		s := 0.0
		for _, l := range losses[lo:hi] {
			s += l
		}
		smooth = append(smooth, plotter.XY{X: float64(hi) / float64(stepsPerEpoch), Y: s / float64(hi-lo)})
	}
	rawLine, err := plotter.NewLine(raw)
	if err != nil {
		return err
	}
	rawLine.Color = color.Gray{Y: 170}
	rawLine.Width = vg.Points(0.3)
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
