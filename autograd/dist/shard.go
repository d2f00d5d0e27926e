package dist

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// ShardOrder returns rank's part of an epoch's order (0 <= rank < world): order[rank],
// order[rank+world], order[rank+2*world], ..., len(order)/world examples, the last
// len(order)%world examples of the order left out, so that every rank gets the same number
// (torch's DistributedSampler with drop_last). With batches of B examples per rank, the ranks'
// batch k together are order[k*B*world : (k+1)*B*world], the single-process batch k of size
// B*world over the same order.
func ShardOrder(order []int, rank, world int) ([]int, error) {
	if world < 1 || rank < 0 || rank >= world {
		return nil, fmt.Errorf("dist: shard: rank %d of %d", rank, world)
	}
	per := len(order) / world
	out := make([]int, per)
	for i := range out {
		out[i] = order[i*world+rank]
	}
	return out, nil
}

// Shard is an nn.Source holding one rank's examples of one epoch, in the order of the epoch: a
// Loader over it (without Shuffle) gives the rank its batches.
type Shard struct {
	src nn.Source
	idx []int
}

// NewShard returns rank's shard of src for the epoch: ShardOrder of src's epoch order, the
// permutation nn.Loader.Order(epoch) gives with Shuffle and seed (every rank computes the same
// one), or 0..n-1 when shuffle is false.
func NewShard(src nn.Source, shuffle bool, seed uint64, epoch, rank, world int) (*Shard, error) {
	if src == nil {
		return nil, fmt.Errorf("dist: shard: nil source")
	}
	l, err := nn.NewLoader(src, nn.LoaderOptions{BatchSize: 1, Shuffle: shuffle, Seed: seed, Device: ops.CPU()})
	if err != nil {
		return nil, fmt.Errorf("dist: shard: %w", err)
	}
	idx, err := ShardOrder(l.Order(epoch), rank, world)
	if err != nil {
		return nil, err
	}
	return &Shard{src: src, idx: idx}, nil
}

// Len returns the shard's number of examples.
func (s *Shard) Len() int { return len(s.idx) }

// Layout returns the source's layout.
func (s *Shard) Layout() nn.Layout { return s.src.Layout() }

// Read reads the shard's example i: the source's example Index(i).
func (s *Shard) Read(i int, ex nn.Example) error {
	if i < 0 || i >= len(s.idx) {
		return fmt.Errorf("dist: shard: example %d of %d", i, len(s.idx))
	}
	return s.src.Read(s.idx[i], ex)
}

// Index returns the source's number of the shard's example i.
func (s *Shard) Index(i int) int { return s.idx[i] }
