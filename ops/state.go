package ops

import (
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// Step state: counts held in device memory (ptx/state.cu, cpu/state.go). The values a training
// step derives from its step number (random keys, Adam's bias corrections) are computed where the
// kernels run from counts that a kernel advances, instead of being passed as kernel parameters
// by the host, so that a step captured into a CUDA graph reads new values at each replay, and
// gives the bits an eager step gives.

// counterAddOp adds sizes[1] to sizes[0] counts of its buffer.
var counterAddOp = row(&kernelOp{name: "counter_add", kernel: ptx.CounterAdd, outs: 1,
	grid: strided(size(0)), units: size(0),
	cpu: func(h *hostArgs, lo, hi int) { cpu.CounterAdd(h.b[0], uint64(h.s[1]), lo, hi) }})

// Counter is a uint64 count in device memory (two float32 slots: cpu.CountAt's layout): the draw
// count of a session's random keys (RandUniformAt, BernoulliMaskAt, RandNormalAt). Set uploads a
// value, Add advances it with a kernel ordered with the device's other work, Value downloads it.
// A Counter is safe for concurrent use; its operations on one device are ordered as they are
// called.
type Counter struct{ buf *Buffer }

// NewCounter returns a counter on d holding v.
func NewCounter(d *Device, v uint64) (*Counter, error) {
	b, err := newBuffer(d, 2)
	if err != nil {
		return nil, opErr("counter", err)
	}
	c := &Counter{buf: b}
	if err := c.Set(v); err != nil {
		b.Release()
		return nil, err
	}
	return c, nil
}

// Device returns the counter's device.
func (c *Counter) Device() *Device { return c.buf.Device() }

// Release frees the counter (as Buffer.Release).
func (c *Counter) Release() bool { return c.buf.Release() }

// Set makes the count v.
func (c *Counter) Set(v uint64) error {
	slots := make([]float32, 2)
	cpu.SetCountAt(slots, 0, v)
	return upload("counter", c.buf, slots)
}

// Add advances the count by inc (mod 2^64) on the device: one launch, or, for an increment
// beyond the largest int (2^31 - 1 on 32-bit platforms, whose kernel sizes are ints), one per
// part of at most that; an increment of more than 1024 such parts (beyond about 2^41 on a 32-bit
// platform) is an error.
func (c *Counter) Add(inc uint64) error {
	if inc/math.MaxInt > 1024 {
		return fmt.Errorf("ops: counter: increment %d is more than 1024 times the largest int of this platform", inc)
	}
	for {
		part := min(inc, math.MaxInt)
		if err := counterAddOp.launch([]*Buffer{c.buf}, nil, nil, []int{1, int(part)}); err != nil {
			return err
		}
		if inc -= part; inc == 0 {
			return nil
		}
	}
}

// Value returns the count (a download: it waits for the device's earlier work).
func (c *Counter) Value() (uint64, error) {
	f, err := c.buf.Float32s()
	if err != nil {
		return 0, opErr("counter", err)
	}
	return cpu.CountAt(f, 0), nil
}

// drawAt runs op with the key KeyOf(seed, count + offset), count read from c where the kernel
// runs.
func (op *randOp) drawAt(c *Counter, n int, seed, offset uint64, scalars ...float64) (*Buffer, error) {
	if c == nil {
		return nil, fmt.Errorf("ops: %s: nil counter", op.name)
	}
	if err := c.buf.useIn(op.name); err != nil {
		return nil, err
	}
	defer c.buf.done()
	return op.run(c.buf.dev, n, drawKey{key: cpu.SplitMix64(seed), count: c.buf.mem, offset: offset}, scalars...)
}

// RandUniformAt is RandUniform on c's device with the key KeyOf(seed, count + offset), where
// count is c's value when the kernel runs (so the same call captured in a graph draws anew after
// each Add).
func RandUniformAt(c *Counter, n int, seed, offset uint64) (*Buffer, error) {
	return uniformOp.drawAt(c, n, seed, offset)
}

// BernoulliMaskAt is BernoulliMask with the key of RandUniformAt.
func BernoulliMaskAt(c *Counter, n int, keep float64, seed, offset uint64) (*Buffer, error) {
	if err := checkKeep(keep); err != nil {
		return nil, err
	}
	return bernoulliOp.drawAt(c, n, seed, offset, keep)
}

// RandNormalAt is RandNormal with the key of RandUniformAt.
func RandNormalAt(c *Counter, n int, mean, std float64, seed, offset uint64) (*Buffer, error) {
	if err := checkNormal(mean, std); err != nil {
		return nil, err
	}
	return normalOp.drawAt(c, n, seed, offset, mean, std)
}
