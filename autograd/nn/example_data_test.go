package nn_test

import (
	"fmt"
	"log"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// Six examples of two features and a class label, in shuffled batches of four uploaded ahead
// by a goroutine; each batch feeds a session step (the features taken as the logits of a
// cross-entropy loss).
func ExampleNewLoader() {
	features := []float32{
		0, 1, // example 0
		1, 0, // example 1
		2, 2,
		3, -3,
		-4, 4,
		5, 5,
	}
	labels := []int{1, 0, 1, 0, 1, 0}
	src, err := nn.NewTensorSource(nn.Layout{Features: []int{2}, Labels: []int{}}, features, nil, labels)
	if err != nil {
		log.Fatal(err)
	}
	loader, err := nn.NewLoader(src, nn.LoaderOptions{BatchSize: 4, Shuffle: true, Seed: 1, Device: ops.CPU(), Prefetch: 1})
	if err != nil {
		log.Fatal(err)
	}
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	for epoch := range 2 {
		for b := range loader.Epoch(epoch) {
			s.Reset()
			logits := s.Const(b.X, b.XShape)
			loss := s.CrossEntropy(logits, b.Labels)
			fmt.Printf("epoch %d batch %d: examples %v, labels %v, shape %v, loss %.4f\n",
				b.Epoch, b.Index, b.Examples, b.Labels, b.XShape, s.Item(loss))
		}
		if err := loader.Err(); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// epoch 0 batch 0: examples [3 0 2 1], labels [0 1 1 0], shape [4 2], loss 0.3305
	// epoch 0 batch 1: examples [5 4], labels [0 1], shape [2 2], loss 0.3467
	// epoch 1 batch 0: examples [1 0 5 4], labels [0 1 0 1], shape [4 2], loss 0.3300
	// epoch 1 batch 1: examples [3 2], labels [0 1], shape [2 2], loss 0.3478
}

// Windows of a token stream for a language model: the tokens of each window and, as labels,
// the tokens that follow them.
func ExampleNewTokenWindows() {
	stream := []int{10, 11, 12, 13, 14, 15, 16, 17, 18}
	src, err := nn.NewTokenWindows(stream, 3, 2) // windows at 0, 2, 4
	if err != nil {
		log.Fatal(err)
	}
	loader, err := nn.NewLoader(src, nn.LoaderOptions{BatchSize: 2, Device: ops.CPU(), Indices: true})
	if err != nil {
		log.Fatal(err)
	}
	for b := range loader.Epoch(0) {
		// b.TokenIdx holds the tokens on the device, for an embedding's GatherIdx.
		fmt.Printf("batch %d: tokens %v %v, labels %v, on the device %d\n", b.Index, b.Tokens, b.TokensShape, b.Labels, b.TokenIdx.Len())
	}
	// Output:
	// batch 0: tokens [10 11 12 12 13 14] [2 3], labels [11 12 13 13 14 15], on the device 6
	// batch 1: tokens [14 15 16] [1 3], labels [15 16 17], on the device 3
}
