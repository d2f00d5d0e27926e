package main

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/stepbench"
	"github.com/torchlean-go/torchlean/ops"
)

// BenchmarkModelStep is the model benchmark suite's rows of this example (issue 27, item 5;
// examples/internal/stepbench), each eager and captured, against internal/bench/torch_models.py:
//
//   - mlp: the example's default MLP, 784-256-10 with ReLU, batch 64, SGD at -lr 0.1 decaying
//     linearly to 0 over 20 epochs of the full data set (938 steps each);
//   - mlp512: the starting point, 784-512-512-10, batch 128, AdamW with PyTorch's
//     defaults, a constant learning rate;
//   - cnn: -model cnn's defaults (convolutions 16, 32, hidden 128, dropout 0.25), batch 64, SGD
//     at 0.05 with momentum 0.9 decaying linearly over 10 epochs.
//
// The eager step is the example's (CrossEntropy on the labels); the captured one is -graph's
// (static images and one-hot labels, oneHotCrossEntropy: the same bits). The batch is random
// pixels and labels, resident on the device.
func BenchmarkModelStep(b *testing.B) {
	stepbench.Run(b, []stepbench.Case{
		{Name: "mlp", Build: func(d *ops.Device) (*stepbench.Step, error) { return classifierStep(d, "mlp") }},
		{Name: "mlp512", Build: func(d *ops.Device) (*stepbench.Step, error) { return classifierStep(d, "mlp512") }},
		{Name: "cnn", Build: func(d *ops.Device) (*stepbench.Step, error) { return classifierStep(d, "cnn") }},
	})
}

// classifierStep builds the training step of the suite's row kind on d.
func classifierStep(d *ops.Device, kind string) (*stepbench.Step, error) {
	const pixels, classes, epochSteps = 28 * 28, 10, 938
	sess := autograd.NewSession(autograd.Options{Device: d, Seed: 1})
	var (
		model nn.Layer
		opt   interface {
			Step() error
			ZeroGrad()
			Close()
		}
		sched nn.Scheduler
		err   error
	)
	batch := 64
	switch kind {
	case "mlp":
		model = nn.NewMLP(sess, []int{pixels, 256, classes}, nn.MLPOptions{})
		sgd := autograd.NewSGD(nn.Parameters(model), autograd.SGDOptions{LR: 0.1})
		opt = sgd
		sched, err = nn.NewLinearLR(sgd, 1, 0, 20*epochSteps)
	case "mlp512":
		batch = 128
		model = nn.NewMLP(sess, []int{pixels, 512, 512, classes}, nn.MLPOptions{})
		opt = autograd.NewAdamW(nn.Parameters(model), autograd.DefaultAdamW())
	case "cnn":
		hidden, _ := strconv.Atoi(cnnDefaults.hidden)
		var channels []int
		for _, f := range strings.Split(cnnDefaults.channels, ",") {
			c, _ := strconv.Atoi(f)
			channels = append(channels, c)
		}
		model = newCNN(sess, 28, 28, channels, []int{hidden}, cnnDefaults.dropout, classes)
		sgd := autograd.NewSGD(nn.Parameters(model), autograd.SGDOptions{LR: cnnDefaults.lr, Momentum: cnnDefaults.momentum})
		opt = sgd
		sched, err = nn.NewLinearLR(sgd, 1, 0, cnnDefaults.epochs*epochSteps)
	}
	var x, y *autograd.StaticInput
	var xb, yb *ops.Buffer
	closeAll := func() {
		for _, in := range []*autograd.StaticInput{x, y} {
			if in != nil {
				in.Release()
			}
		}
		for _, buf := range []*ops.Buffer{xb, yb} {
			if buf != nil {
				buf.Release()
			}
		}
		opt.Close()
		sess.Close()
	}
	labels, onehot := stepbench.Labels(2, batch, classes)
	if err == nil {
		err = sess.Err()
	}
	if err == nil {
		xb, err = stepbench.Upload(d, "images", stepbench.Uniform(1, batch*pixels))
	}
	if err == nil {
		yb, err = stepbench.Upload(d, "one-hot labels", onehot)
	}
	if err == nil {
		x, err = sess.NewStaticInput(batch, pixels)
	}
	if err == nil {
		y, err = sess.NewStaticInput(batch, classes)
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	xShape := []int{batch, pixels}
	return &stepbench.Step{
		Sess: sess,
		Eager: func() error { // step's, without reading the loss
			sess.Reset()
			loss := sess.CrossEntropy(model.Forward(sess.Const(xb, xShape)), labels)
			sess.Backward(loss)
			if err := opt.Step(); err != nil {
				return err
			}
			opt.ZeroGrad()
			return sess.Err()
		},
		Load: func() error { return errors.Join(x.CopyFrom(xb), y.CopyFrom(yb)) },
		Body: func() error { // newGraphSteps's Body
			sess.Reset()
			loss := oneHotCrossEntropy(sess, model.Forward(x.Var()), y.Var())
			sess.Backward(loss)
			if err := opt.Step(); err != nil {
				return err
			}
			opt.ZeroGrad()
			return sess.Err()
		},
		Sched: sched,
		Close: closeAll,
	}, nil
}
