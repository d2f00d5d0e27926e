package nn

import (
	"errors"
	"fmt"
	"iter"
	"math/bits"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Data loading: torch.utils.data's Dataset and DataLoader for in-memory data.
//
// A Source holds examples; each example has up to three parts, all of fixed shapes: float32
// features (an image), integer inputs (token ids) and integer targets (a class label, the next
// tokens). A Loader cuts an epoch of a Source into batches, shuffled by a seed, and hands them
// out with the features uploaded to a device, optionally prepared ahead by a goroutine:
//
//	loader, err := nn.NewLoader(src, nn.LoaderOptions{BatchSize: 64, Shuffle: true, Seed: 1, Prefetch: 1})
//	for epoch := range epochs {
//		for b := range loader.Epoch(epoch) {
//			s.Reset()
//			x := s.Const(b.X, b.XShape)
//			loss := s.CrossEntropy(model(x), b.Labels)
//			...
//		}
//		if err := loader.Err(); err != nil { ... }
//	}

// Layout is the shape of one example's parts. A nil shape means the example has no such part; a
// part with an empty, non-nil shape ([]int{}) is one number per example (a class label). Every
// dimension is >= 1.
type Layout struct {
	Features []int // float32 features, e.g. [784] or [1, 28, 28] for an image
	Tokens   []int // integer inputs, e.g. [T] token ids
	Labels   []int // integer targets, e.g. []int{} for a class label or [T] for the next tokens
}

// Example is where a Source writes one example: slices of exactly the sizes of the Source's
// Layout (empty for an absent part), inside the batch being assembled.
type Example struct {
	Features []float32
	Tokens   []int
	Labels   []int
}

// Source is a data set of Len() examples of one Layout (PyTorch's map-style Dataset). A Loader
// calls Read from one goroutine at a time (its prefetching goroutine when it prefetches), so a
// Source need not be safe for concurrent use, but it must not change while an epoch runs.
type Source interface {
	Len() int
	Layout() Layout
	// Read writes example i (0 <= i < Len()) into ex. An error ends the epoch (Loader.Err).
	Read(i int, ex Example) error
}

// partElems is the number of elements of shape, or an error naming part.
func partElems(part string, shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 1 {
			return 0, fmt.Errorf("nn: %s shape %v: dimensions must be >= 1", part, shape)
		}
		hi, lo := bits.Mul64(uint64(n), uint64(d))
		if hi != 0 || lo > uint64(maxPartElems) {
			return 0, fmt.Errorf("nn: %s shape %v: too many elements", part, shape)
		}
		n = int(lo)
	}
	return n, nil
}

// maxPartElems bounds the elements of a part of one example and of a batch.
const maxPartElems = 1<<31 - 1

// partSizes are the numbers of elements of a Layout's parts (0 for an absent part).
type partSizes struct{ features, tokens, labels int }

func (l Layout) partSizes() (partSizes, error) {
	var s partSizes
	var err error
	if l.Features == nil && l.Tokens == nil && l.Labels == nil {
		return s, errors.New("nn: layout without features, tokens or labels")
	}
	if l.Features != nil {
		if s.features, err = partElems("features", l.Features); err != nil {
			return s, err
		}
	}
	if l.Tokens != nil {
		if s.tokens, err = partElems("tokens", l.Tokens); err != nil {
			return s, err
		}
	}
	if l.Labels != nil {
		if s.labels, err = partElems("labels", l.Labels); err != nil {
			return s, err
		}
	}
	return s, nil
}

// TensorSource is a Source over row-major host arrays: example i is the i-th row of each part.
// It borrows the arrays: they must not change while a Loader reads them.
type TensorSource struct {
	layout   Layout
	sz       partSizes
	n        int
	features []float32
	tokens   []int
	labels   []int
}

// NewTensorSource makes a TensorSource (PyTorch's TensorDataset) of the parts the layout has:
// features holds n rows of the layout's feature size, tokens and labels n rows of theirs, and n
// must be the same for every part present. The arrays of absent parts must be empty. For
// Fashion-MNIST: NewTensorSource(Layout{Features: []int{784}, Labels: []int{}}, images, nil, labels).
func NewTensorSource(layout Layout, features []float32, tokens, labels []int) (*TensorSource, error) {
	sz, err := layout.partSizes()
	if err != nil {
		return nil, err
	}
	s := &TensorSource{layout: layout.clone(), sz: sz, n: -1, features: features, tokens: tokens, labels: labels}
	for _, p := range []struct {
		name      string
		size, len int
	}{{"features", sz.features, len(features)}, {"tokens", sz.tokens, len(tokens)}, {"labels", sz.labels, len(labels)}} {
		switch {
		case p.size == 0 && p.len > 0:
			return nil, fmt.Errorf("nn: tensor source: %d %s, but the layout has none", p.len, p.name)
		case p.size == 0:
		case p.len%p.size != 0:
			return nil, fmt.Errorf("nn: tensor source: %d %s are not rows of %d", p.len, p.name, p.size)
		case s.n >= 0 && p.len/p.size != s.n:
			return nil, fmt.Errorf("nn: tensor source: %d rows of %s, but %d of the parts before", p.len/p.size, p.name, s.n)
		default:
			s.n = p.len / p.size
		}
	}
	return s, nil
}

func (l Layout) clone() Layout {
	return Layout{Features: slices.Clone(l.Features), Tokens: slices.Clone(l.Tokens), Labels: slices.Clone(l.Labels)}
}

// Len returns the number of rows.
func (s *TensorSource) Len() int { return s.n }

// Layout returns the layout given to NewTensorSource.
func (s *TensorSource) Layout() Layout { return s.layout.clone() }

// Read copies row i of each part.
func (s *TensorSource) Read(i int, ex Example) error {
	if i < 0 || i >= s.n {
		return fmt.Errorf("nn: tensor source: example %d of %d", i, s.n)
	}
	copy(ex.Features, s.features[i*s.sz.features:(i+1)*s.sz.features])
	copy(ex.Tokens, s.tokens[i*s.sz.tokens:(i+1)*s.sz.tokens])
	copy(ex.Labels, s.labels[i*s.sz.labels:(i+1)*s.sz.labels])
	return nil
}

// TokenWindows is a Source of windows of a token stream for a language model: example i has the
// Tokens stream[i*stride : i*stride+length] and, as Labels, the tokens that follow each of them,
// stream[i*stride+1 : i*stride+length+1]. It borrows the stream.
type TokenWindows struct {
	stream         []int
	length, stride int
}

// NewTokenWindows makes the windows of length tokens starting every stride tokens, as many as fit
// with their next token: (len(stream) - length - 1) / stride + 1 of them. length and stride are
// >= 1, and the stream holds at least length + 1 tokens.
func NewTokenWindows(stream []int, length, stride int) (*TokenWindows, error) {
	if length < 1 || stride < 1 || length > maxPartElems {
		return nil, fmt.Errorf("nn: token windows: want length and stride >= 1, have %d and %d", length, stride)
	}
	if len(stream) < length+1 {
		return nil, fmt.Errorf("nn: token windows: a stream of %d tokens has no window of %d and its next token", len(stream), length)
	}
	return &TokenWindows{stream: stream, length: length, stride: stride}, nil
}

// Len returns the number of windows.
func (w *TokenWindows) Len() int { return (len(w.stream)-w.length-1)/w.stride + 1 }

// Layout is Tokens [length], Labels [length].
func (w *TokenWindows) Layout() Layout {
	return Layout{Tokens: []int{w.length}, Labels: []int{w.length}}
}

// Read copies window i and its targets.
func (w *TokenWindows) Read(i int, ex Example) error {
	if i < 0 || i >= w.Len() {
		return fmt.Errorf("nn: token windows: example %d of %d", i, w.Len())
	}
	at := i * w.stride
	copy(ex.Tokens, w.stream[at:at+w.length])
	copy(ex.Labels, w.stream[at+1:at+1+w.length])
	return nil
}

// LoaderOptions configure NewLoader.
type LoaderOptions struct {
	BatchSize int         // examples per batch, >= 1
	Shuffle   bool        // visit the examples in an order drawn from Seed and the epoch (Loader.Order)
	Seed      uint64      // the shuffling seed
	DropLast  bool        // leave out the last batch when it is short
	Device    *ops.Device // where batches go; nil: ops.Default()
	// Prefetch is the number of batches a goroutine assembles and uploads ahead of the one in
	// use, 0 to 16: 0 assembles each batch in the loop's goroutine when it is asked for; 1 or 2
	// overlap the next batch's assembly and upload with the current step.
	Prefetch int
	// Indices also uploads the batches' tokens and labels to the device as ops.Indices (for
	// GatherIdx and the like); they must then be >= 0.
	Indices bool
}

// maxPrefetch bounds LoaderOptions.Prefetch.
const maxPrefetch = 16

// Batch is one batch of a Loader's epoch. Its device memory (X and the Indices) belongs to the
// loader, which releases it when the loop asks for the next batch or ends (break and return
// included): a batch is valid during its iteration of the loop. Keep hands a batch to the caller,
// who then releases it. Tokens and Labels are fresh host slices that the caller may keep.
//
// A tape that recorded X (Tape.Const borrows it) must not use it after the loop moved on; a loop
// that Resets the session at the start of each step (ExampleNewLoader) is fine: the previous
// batch is released just before that Reset, which reads no values.
type Batch struct {
	Epoch, Index int   // the epoch and the batch's number in it, from 0
	Examples     []int // the source's numbers of the batch's examples, in batch order

	X      *ops.Buffer // the features, row-major XShape, on the loader's device; nil without features
	XShape []int       // [size, Layout.Features...]

	Tokens      []int        // the tokens, row-major TokensShape; nil without tokens
	TokensShape []int        // [size, Layout.Tokens...]
	TokenIdx    *ops.Indices // Tokens on the device (LoaderOptions.Indices), else nil

	Labels      []int        // the labels, row-major LabelsShape; nil without labels
	LabelsShape []int        // [size, Layout.Labels...]
	LabelIdx    *ops.Indices // Labels on the device (LoaderOptions.Indices), else nil

	kept bool
}

// Size returns the number of examples in the batch.
func (b *Batch) Size() int { return len(b.Examples) }

// Keep makes the batch the caller's: the loader will not release it, Release will.
func (b *Batch) Keep() { b.kept = true }

// Release frees the batch's device memory (X, TokenIdx, LabelIdx). It is idempotent; the host
// slices stay usable.
func (b *Batch) Release() {
	if b == nil {
		return
	}
	b.X.Release()
	b.TokenIdx.Release()
	b.LabelIdx.Release()
}

// release is the loader's release: it leaves a kept batch alone.
func (b *Batch) release() {
	if b != nil && !b.kept {
		b.Release()
	}
}

// Loader hands out the batches of a Source epoch by epoch (PyTorch's DataLoader). An epoch is a
// Go iterator:
//
//	for b := range loader.Epoch(epoch) { ... }
//	if err := loader.Err(); err != nil { ... }
//
// Batch k of an epoch holds the examples Order(epoch)[k*BatchSize : (k+1)*BatchSize] (the last
// one fewer unless DropLast). With Prefetch > 0 a goroutine of the epoch assembles the next
// batches and uploads them while the loop body runs; it stops, and every batch the loop did not
// keep is released, when the loop ends. Buffers may be created from a second goroutine: a
// Device is safe for concurrent use (the CPU backend's allocator takes a mutex and its telemetry
// is atomic; a CUDA upload takes the device's context on its own locked thread and goes to the
// device's stream after the kernels queued before it, so a batch uploaded ahead never overtakes
// the step that runs, and a buffer the loop released is reused only after the kernels that read
// it).
//
// One epoch runs at a time: starting one while another is in progress fails. A Loader is not
// safe for concurrent use.
type Loader struct {
	src    Source
	o      LoaderOptions
	layout Layout
	sz     partSizes
	n      int

	run    *epochRun // the epoch in progress, nil between epochs
	err    error
	closed bool
}

// NewLoader checks the options and the source's layout. The source's Len is read now: it must
// not change afterwards.
func NewLoader(src Source, o LoaderOptions) (*Loader, error) {
	if src == nil {
		return nil, errors.New("nn: loader: nil source")
	}
	if o.BatchSize < 1 || o.BatchSize > maxPartElems {
		return nil, fmt.Errorf("nn: loader: batch size %d (want 1 to %d)", o.BatchSize, maxPartElems)
	}
	if o.Prefetch < 0 || o.Prefetch > maxPrefetch {
		return nil, fmt.Errorf("nn: loader: prefetch %d (want 0 to %d)", o.Prefetch, maxPrefetch)
	}
	layout := src.Layout().clone()
	sz, err := layout.partSizes()
	if err != nil {
		return nil, fmt.Errorf("nn: loader: %w", err)
	}
	n := src.Len()
	if n < 0 {
		return nil, fmt.Errorf("nn: loader: source of length %d", n)
	}
	for _, size := range []int{sz.features, sz.tokens, sz.labels} {
		if hi, lo := bits.Mul64(uint64(size), uint64(o.BatchSize)); hi != 0 || lo > maxPartElems {
			return nil, fmt.Errorf("nn: loader: batches of %d examples of %d elements are too large", o.BatchSize, size)
		}
	}
	if o.Device == nil {
		o.Device = ops.Default()
	}
	return &Loader{src: src, o: o, layout: layout, sz: sz, n: n}, nil
}

// Len returns the number of batches in an epoch.
func (l *Loader) Len() int {
	if l.o.DropLast {
		return l.n / l.o.BatchSize
	}
	return (l.n + l.o.BatchSize - 1) / l.o.BatchSize
}

// Layout returns the source's layout.
func (l *Loader) Layout() Layout { return l.layout.clone() }

// Order returns the order in which an epoch visits the examples: 0, 1, ..., n-1 without
// Shuffle; with it, a permutation that depends only on (Seed, epoch), the same on every device,
// platform and run. The permutation is a Fisher-Yates shuffle of 0..n-1 driven by SplitMix64:
// with key = ops.KeyOf(Seed, epoch) and w_k the k-th output (from k = 1) of the SplitMix64
// generator started at key, that is mix(key + k * 0x9e3779b97f4a7c15) where
// mix(z) = z ^ z>>30, * 0xbf58476d1ce4e5b9, ^ >>27, * 0x94d049bb133111eb, ^ >>31 (mod 2^64), the
// steps i = n-1, n-2, ..., 1 (k = n - i) swap positions i and j = high 64 bits of w_k * (i+1).
// A negative epoch is treated as 0 by Order (Epoch rejects it).
func (l *Loader) Order(epoch int) []int {
	order := make([]int, l.n)
	for i := range order {
		order[i] = i
	}
	if l.o.Shuffle {
		shuffleOrder(order, ops.KeyOf(l.o.Seed, uint64(max(epoch, 0))))
	}
	return order
}

// shuffleOrder permutes p as Order documents.
func shuffleOrder(p []int, key uint64) {
	state := key
	for i := len(p) - 1; i >= 1; i-- {
		state += 0x9e3779b97f4a7c15
		z := state
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		j, _ := bits.Mul64(z, uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
}

// Epoch returns the batches of an epoch (>= 0) in order. See EpochFrom.
func (l *Loader) Epoch(epoch int) iter.Seq[*Batch] { return l.EpochFrom(epoch, 0) }

// EpochFrom returns the batches of an epoch from batch number start on (0 <= start <= Len()),
// e.g. to resume a run that stopped in the middle of an epoch: they are the batches that Epoch
// would give from there. When the loop ends early, or an error (from the source, an upload, a
// bad argument) ends the epoch, the batches it did not keep are released; Err then reports the
// error. The returned sequence may be ranged over again (it runs the epoch again).
func (l *Loader) EpochFrom(epoch, start int) iter.Seq[*Batch] {
	return func(yield func(*Batch) bool) {
		l.err = nil
		switch {
		case l.closed:
			l.err = errors.New("nn: loader: closed")
		case l.run != nil:
			l.err = errors.New("nn: loader: an epoch is already in progress (one epoch at a time)")
		case epoch < 0:
			l.err = fmt.Errorf("nn: loader: epoch %d (want >= 0)", epoch)
		case start < 0 || start > l.Len():
			l.err = fmt.Errorf("nn: loader: start at batch %d of %d", start, l.Len())
		}
		if l.err != nil {
			return
		}
		r := l.startEpoch(epoch, start)
		defer func() {
			r.stop()
			if l.run == r {
				l.run = nil
			}
		}()
		for {
			b, err := r.next()
			if err != nil {
				l.err = err
				return
			}
			if b == nil {
				return
			}
			if !yield(b) {
				return
			}
			r.cur = nil
			b.release()
		}
	}
}

// Err returns the error that ended the last epoch, nil when it ran to its end or the loop left
// it early.
func (l *Loader) Err() error { return l.err }

// Close ends the epoch in progress, if any (its goroutine stops; its batches that were not kept,
// the one in use included, are released), and makes later epochs fail. Call it from the goroutine
// that runs the epoch's loop, or after the loop (it is needed only for an epoch pulled with
// iter.Pull and never stopped: a range loop cleans up when it ends). It is idempotent.
func (l *Loader) Close() error {
	l.closed = true
	if l.run != nil {
		l.run.stop()
		l.run = nil
	}
	return nil
}

// epochRun is one epoch in progress.
type epochRun struct {
	l            *Loader
	epoch        int
	order        []int
	pos, end     int           // the next batch to build (without prefetch) and the end
	stage        []float32     // the host features of the batch being built
	cur          *Batch        // the batch the loop holds
	items        chan prepared // prefetched batches (nil without prefetch)
	quit, exited chan struct{} // closed to stop the goroutine; closed by it when it exits
	stopped      bool
}

// prepared is a batch or the error that ends the epoch.
type prepared struct {
	b   *Batch
	err error
}

func (l *Loader) startEpoch(epoch, start int) *epochRun {
	r := &epochRun{l: l, epoch: epoch, order: l.Order(epoch), pos: start, end: l.Len()}
	l.run = r
	if l.o.Prefetch > 0 {
		r.items = make(chan prepared, l.o.Prefetch-1) // plus the one the goroutine holds: Prefetch ahead
		r.quit, r.exited = make(chan struct{}), make(chan struct{})
		go r.produce(start)
	}
	return r
}

// produce is the prefetching goroutine: it builds the batches from start on and queues them.
func (r *epochRun) produce(start int) {
	defer close(r.exited)
	defer close(r.items)
	for k := start; k < r.end; k++ {
		select { // stop before building when the loop is gone
		case <-r.quit:
			return
		default:
		}
		b, err := r.build(k)
		select {
		case r.items <- prepared{b, err}:
		case <-r.quit:
			b.release()
			return
		}
		if err != nil {
			return
		}
	}
}

// next returns the next batch, nil at the end of the epoch or once stopped.
func (r *epochRun) next() (*Batch, error) {
	if r.stopped {
		return nil, nil
	}
	var p prepared
	if r.items == nil {
		if r.pos >= r.end {
			return nil, nil
		}
		p.b, p.err = r.build(r.pos)
		r.pos++
	} else {
		var ok bool
		if p, ok = <-r.items; !ok {
			return nil, nil
		}
	}
	r.cur = p.b
	return p.b, p.err
}

// stop ends the epoch: the goroutine exits, and the batches it queued and the one in use are
// released (unless kept). Idempotent.
func (r *epochRun) stop() {
	if r.stopped {
		return
	}
	r.stopped = true
	if r.items != nil {
		close(r.quit)
		<-r.exited
		for p := range r.items {
			p.b.release()
		}
	}
	r.cur.release()
	r.cur = nil
}

// build assembles batch k: it reads its examples and uploads the features (and the Indices).
func (r *epochRun) build(k int) (*Batch, error) {
	l := r.l
	bs := l.o.BatchSize
	idx := r.order[k*bs : min((k+1)*bs, l.n)]
	size := len(idx)
	b := &Batch{Epoch: r.epoch, Index: k, Examples: slices.Clone(idx)}
	sz := l.sz
	var features []float32
	if sz.features > 0 {
		if cap(r.stage) < size*sz.features {
			r.stage = make([]float32, size*sz.features)
		}
		features = r.stage[:size*sz.features] // uploads copy it: reused for the next batch
		b.XShape = append([]int{size}, l.layout.Features...)
	}
	if sz.tokens > 0 {
		b.Tokens = make([]int, size*sz.tokens)
		b.TokensShape = append([]int{size}, l.layout.Tokens...)
	}
	if sz.labels > 0 {
		b.Labels = make([]int, size*sz.labels)
		b.LabelsShape = append([]int{size}, l.layout.Labels...)
	}
	for j, i := range idx {
		ex := Example{
			Features: features[j*sz.features : (j+1)*sz.features],
			Tokens:   b.Tokens[j*sz.tokens : (j+1)*sz.tokens],
			Labels:   b.Labels[j*sz.labels : (j+1)*sz.labels],
		}
		if err := l.src.Read(i, ex); err != nil {
			return nil, fmt.Errorf("nn: loader: epoch %d batch %d: example %d: %w", r.epoch, k, i, err)
		}
	}
	var err error
	if features != nil {
		if b.X, err = ops.FromFloat32(l.o.Device, features); err != nil {
			return nil, fmt.Errorf("nn: loader: epoch %d batch %d: features: %w", r.epoch, k, err)
		}
	}
	if l.o.Indices && b.Tokens != nil {
		if b.TokenIdx, err = ops.NewIndices(l.o.Device, b.Tokens); err != nil {
			b.Release()
			return nil, fmt.Errorf("nn: loader: epoch %d batch %d: tokens: %w", r.epoch, k, err)
		}
	}
	if l.o.Indices && b.Labels != nil {
		if b.LabelIdx, err = ops.NewIndices(l.o.Device, b.Labels); err != nil {
			b.Release()
			return nil, fmt.Errorf("nn: loader: epoch %d batch %d: labels: %w", r.epoch, k, err)
		}
	}
	return b, nil
}
