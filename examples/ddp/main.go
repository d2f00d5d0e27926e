// Command ddp trains a multilayer perceptron (784-128-10, ReLU) on Fashion-MNIST with data
// parallelism (package autograd/dist): on every local GPU (one rank per device, NCCL between
// them) when CUDA is usable, else on -ranks in-process CPU ranks, or, launched torchrun-style
// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT in the environment), as one rank of a
// group of processes on one or several machines. Each rank trains on its shard of every epoch
// (reshuffled by -seed and the epoch) with -batch examples per step; the gradients are averaged
// across the ranks before every SGD step. It prints each rank's throughput per epoch and the
// final test accuracy.
//
//	go run ./examples/ddp                  # every local GPU, else 2 CPU ranks
//	go run ./examples/ddp -ranks 4 -device cpu
//
// It reads the Fashion-MNIST subset that examples/fashionmnist embeds (-data, by default
// examples/fashionmnist/subset from the repository root or ../fashionmnist/subset).
//
// Unlike the other examples it has no -graph flag: a rank's step cannot be captured into a CUDA
// graph. The gradients' all-reduce is an NCCL call queued as a library call, which a capture
// refuses (ops' libraryCall; capturing NCCL collectives would need them issued through
// libraryCallCapturable with every rank capturing the same sequence), the CPU ranks exchange
// gradients through host memory, and the step also takes its labels as []int
// (CrossEntropy), uploaded per step. examples/fashionmnist -graph captures the same kind of
// step on one device.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/dist"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

type config struct {
	ranks, epochs, batch, hidden, limit int
	lr                                  float64
	seed                                uint64
	device                              string
	exact                               bool
	data                                string
}

func main() {
	var c config
	flag.IntVar(&c.ranks, "ranks", 2, "in-process CPU ranks when no GPU is used")
	flag.StringVar(&c.device, "device", "auto", "auto (every local GPU, else CPU ranks) or cpu")
	flag.IntVar(&c.epochs, "epochs", 5, "passes over the training set")
	flag.IntVar(&c.batch, "batch", 32, "examples per rank per step (the global batch is ranks times this)")
	flag.IntVar(&c.hidden, "hidden", 128, "width of the hidden layer")
	flag.Float64Var(&c.lr, "lr", 0.1, "SGD learning rate (momentum 0.9)")
	flag.Uint64Var(&c.seed, "seed", 1, "random seed (initialization on rank 0, shuffling)")
	flag.BoolVar(&c.exact, "exact", false, "exact (fixed-order) all-reduce on GPUs too (always on CPU ranks)")
	flag.StringVar(&c.data, "data", "", "directory of the Fashion-MNIST IDX files (default: the subset of examples/fashionmnist)")
	flag.IntVar(&c.limit, "limit", 0, "use only the first N training images (0: all)")
	flag.Parse()
	acc, err := run(c, os.Stdout)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("test accuracy: %.2f%%\n", 100*acc)
}

// run trains as configured and returns the test accuracy (measured by rank 0).
func run(c config, out *os.File) (float64, error) {
	if c.ranks < 1 || c.epochs < 1 || c.batch < 1 || c.hidden < 1 || !(c.lr > 0) {
		return 0, errors.New("ddp: -ranks, -epochs, -batch, -hidden and -lr must be positive")
	}
	train, test, err := loadData(c.data)
	if err != nil {
		return 0, err
	}
	if c.limit > 0 && c.limit < train.n {
		train.n, train.x, train.y = c.limit, train.x[:c.limit*784], train.y[:c.limit]
	}
	src, err := nn.NewTensorSource(nn.Layout{Features: []int{784}, Labels: []int{}}, train.x, nil, train.y)
	if err != nil {
		return 0, err
	}
	var acc float64
	body := func(w *dist.Worker) error {
		a, err := trainRank(c, w, src, test, out)
		if w.Rank == 0 {
			acc = a
		}
		return err
	}
	o := dist.RunOptions{Exact: c.exact}
	if e, ok, err := dist.EnvFromOS(); err != nil {
		return 0, err
	} else if ok { // launched torchrun-style: this process is one rank
		var d *ops.Device
		if c.device == "cpu" {
			d = ops.CPU()
		}
		w, err := dist.Init(e, d, o)
		if err != nil {
			return 0, err
		}
		defer w.Close()
		err = body(w)
		return acc, err
	}
	devs := dist.LocalDevices(c.ranks)
	if c.device == "cpu" {
		devs = make([]*ops.Device, c.ranks)
		for i := range devs {
			devs[i] = ops.CPU()
		}
	}
	fmt.Fprintf(out, "%d ranks on %s\n", len(devs), devs[0])
	err = dist.RunLocal(devs, o, body)
	return acc, err
}

// trainRank is one rank's training loop; rank 0 also measures the test accuracy at the end.
func trainRank(c config, w *dist.Worker, src nn.Source, test *dataset, out *os.File) (float64, error) {
	s := autograd.NewSession(autograd.Options{Device: w.Device, Seed: c.seed})
	defer s.Close()
	w1 := s.ParamUniform("fc1.weight", []int{c.hidden, 784}, -1/28.0, 1/28.0)
	b1 := s.ParamUniform("fc1.bias", []int{c.hidden}, -1/28.0, 1/28.0)
	k := 1 / float64(c.hidden)
	w2 := s.ParamUniform("fc2.weight", []int{10, c.hidden}, -k, k)
	b2 := s.ParamUniform("fc2.bias", []int{10}, -k, k)
	forward := func(x autograd.Var) autograd.Var {
		return s.Linear(s.Relu(s.Linear(x, s.Use(w1), s.Use(b1))), s.Use(w2), s.Use(b2))
	}
	ddp, err := dist.New(s, w.Comm, dist.Options{})
	if err != nil {
		return 0, err
	}
	opt := autograd.NewSGD(s.Params(), autograd.SGDOptions{LR: c.lr, Momentum: 0.9})
	for epoch := range c.epochs {
		shard, err := dist.NewShard(src, true, c.seed, epoch, w.Rank, w.WorldSize)
		if err != nil {
			return 0, err
		}
		l, err := nn.NewLoader(shard, nn.LoaderOptions{BatchSize: c.batch, DropLast: true, Device: w.Device, Prefetch: 1})
		if err != nil {
			return 0, err
		}
		start, seen := time.Now(), 0
		var last float32
		for b := range l.Epoch(epoch) {
			s.Reset()
			loss := s.CrossEntropy(forward(s.Const(b.X, b.XShape)), b.Labels)
			if err := ddp.Backward(loss); err != nil {
				return 0, err
			}
			if err := opt.Step(); err != nil {
				return 0, err
			}
			opt.ZeroGrad()
			seen += b.Size()
			last = s.Item(loss)
		}
		if err := l.Err(); err != nil {
			return 0, err
		}
		fmt.Fprintf(out, "epoch %d rank %d: %.0f examples/s, last loss %.4f\n",
			epoch+1, w.Rank, float64(seen)/time.Since(start).Seconds(), last)
	}
	if w.Rank != 0 {
		return 0, s.Err()
	}
	right := 0
	const chunk = 500
	for lo := 0; lo < test.n; lo += chunk {
		hi := min(lo+chunk, test.n)
		s.Reset()
		logits, err := s.Value(forward(s.Input(test.x[lo*784:hi*784], hi-lo, 784))).Float32s()
		if err != nil {
			return 0, err
		}
		for i := range hi - lo {
			best := 0
			for j := range 10 {
				if logits[i*10+j] > logits[i*10+best] {
					best = j
				}
			}
			if best == test.y[lo+i] {
				right++
			}
		}
	}
	return float64(right) / float64(test.n), s.Err()
}

// defaultData finds examples/fashionmnist's subset from the repository root or examples/ddp.
func defaultData() string {
	for _, d := range []string{"examples/fashionmnist/subset", "../fashionmnist/subset"} {
		if _, err := os.Stat(filepath.Join(d, "train-labels-idx1-ubyte.gz")); err == nil {
			return d
		}
	}
	return "examples/fashionmnist/subset"
}
