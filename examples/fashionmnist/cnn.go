package main

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
)

// newCNN returns a small convolutional network of s for rows x cols grayscale images given as
// flat rows of pixels (N, rows*cols), as a Sequential: the rows reshaped to (N, 1, rows, cols);
// for each width c of channels a Conv2d(prev, c, 3x3, padding 1), a ReLU and a 2x2 max pooling
// of stride 2 (each halving the image, rounding down); then Flatten, and for each width h of
// hidden a Linear to h, a ReLU and, when dropout > 0, a Dropout of that probability; last a
// Linear to classes. With channels [16, 32] (the example's default), hidden [128] and 28x28
// images it is PyTorch's
//
//	nn.Sequential(nn.Unflatten(1, (1, 28, 28)),
//		nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
//		nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
//		nn.Flatten(), nn.Linear(32*7*7, 128), nn.ReLU(), nn.Dropout(p), nn.Linear(128, 10))
//
// with the same keys ("1.weight", "4.weight", "8.weight", "11.weight" and their biases) and
// PyTorch's default initialization. An image too small for its poolings (a side halved to 0)
// is an error recorded in the session.
func newCNN(s *autograd.Session, rows, cols int, channels, hidden []int, dropout float64, classes int) *nn.Sequential {
	q := nn.NewSequential(nn.Func(func(t *autograd.Tape, x autograd.Var) autograd.Var {
		return t.Reshape(x, t.Shape(x)[0], 1, rows, cols)
	}))
	in, h, w := 1, rows, cols
	pad := autograd.ConvOptions{Padding: []int{1, 1}}
	for _, c := range channels {
		q.Append(nn.NewConv2d(s, in, c, 3, 3, pad, true))
		q.Append(nn.ReLU())
		q.Append(nn.MaxPool2d(2, 2, 0))
		in, h, w = c, h/2, w/2
	}
	if h < 1 || w < 1 {
		s.Fail(fmt.Errorf("fashionmnist: cnn: %dx%d images are too small for %d poolings of 2x2", rows, cols, len(channels)))
	}
	q.Append(nn.Flatten())
	width := in * h * w
	for _, n := range hidden {
		q.Append(nn.NewLinear(s, width, n, true))
		q.Append(nn.ReLU())
		if dropout > 0 {
			q.Append(nn.NewDropout(dropout))
		}
		width = n
	}
	q.Append(nn.NewLinear(s, width, classes, true))
	return q
}
