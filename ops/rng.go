package ops

import (
	"fmt"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// Counter-based random numbers: element i of a call keyed by key is a function of SplitMix64(key+i)
// only, so every device and every launch geometry produce the same stream.

var (
	uniformOp = &randOp{name: "rand_uniform", kernel: ptx.RandUniform,
		cpu: func(d []float32, k, off uint64, _ [2]float32) { cpu.RandUniform(d, k, off) }}
	bernoulliOp = &randOp{name: "bernoulli_mask", kernel: ptx.BernoulliMask, sc: 1,
		cpu: func(d []float32, k, off uint64, s [2]float32) { cpu.BernoulliMask(d, k, off, s[0]) }}
	normalOp = &randOp{name: "rand_normal", kernel: ptx.RandNormal, sc: 2,
		cpu: func(d []float32, k, off uint64, s [2]float32) { cpu.RandNormal(d, k, off, s[0], s[1]) }}
)

// randOp is one row of the random family: the kernel's parameters are (dst, count, n, key,
// offset, scalars) (ptx.RNG); the CPU twin gets the draw's key (drawKey.at) and the offset of its
// slice in the buffer, so that element i depends only on (key, i).
type randOp struct {
	name   string
	kernel *ptx.Kernel
	sc     int // float32 scalars
	cpu    func(dst []float32, key, offset uint64, s [2]float32)
}

// drawKey is the key of a random call: key itself, or, when count is set (a count in device
// memory: a Counter's), cpu.DrawKey(key, count, offset), read where the kernel runs.
type drawKey struct {
	key    uint64
	count  storage // zero: none
	offset uint64
}

// at returns the key on the CPU, reading the count from host memory.
func (k drawKey) at() uint64 {
	if k.count.isZero() {
		return k.key
	}
	return cpu.DrawKey(k.key, cpu.CountAt(k.count.host, 0), k.offset)
}

// KeyOf derives the key of one random call from a seed and a per-session counter:
// SplitMix64(SplitMix64(seed) ^ counter). For a fixed seed distinct counters give distinct keys
// (both steps are bijections), and unlike the reference's SplitMix64(seed + counter) the pairs
// (s, c) and (s+1, c-1) do not collide.
func KeyOf(seed, counter uint64) uint64 { return cpu.SplitMix64(cpu.SplitMix64(seed) ^ counter) }

func (op *randOp) run(d *Device, n int, key drawKey, scalars ...float64) (*Buffer, error) {
	out, err := newBuffer(d, n)
	if err != nil {
		return nil, opErr(op.name, err)
	}
	if n == 0 {
		return out, nil
	}
	var sc [2]float32
	for k, v := range scalars {
		sc[k] = float32(v)
	}
	if err := d.be.randKernel(op, out.mem, n, key, sc); err != nil {
		out.Release()
		return nil, opErr(op.name, err)
	}
	return out, nil
}

// RandUniform returns n draws from U[0,1): element i is float32(low32(SplitMix64(key+i))) * 2^-32,
// with the rare 1.0 sent to the largest float32 below 1.
//
// Element i of key k is element i+1 of key k-1, so calls meant to be independent must not use
// neighbouring keys: derive each call's key with KeyOf(seed, counter), as Session does.
func RandUniform(d *Device, n int, key uint64) (*Buffer, error) {
	return uniformOp.run(d, n, drawKey{key: key})
}

// BernoulliMask returns n values in {0, 1}: 1 where float32(keep) > the uniform draw i. keep
// must be in [0, 1]. Keys as for RandUniform.
func BernoulliMask(d *Device, n int, keep float64, key uint64) (*Buffer, error) {
	if err := checkKeep(keep); err != nil {
		return nil, err
	}
	return bernoulliOp.run(d, n, drawKey{key: key}, keep)
}

func checkKeep(keep float64) error {
	if !(keep >= 0 && keep <= 1) {
		return fmt.Errorf("ops: %s: keep probability %v is outside [0, 1]", bernoulliOp.name, keep)
	}
	return nil
}

// RandNormal returns n draws from N(mean, std^2) by Box-Muller on the draws 2i and 2i+1. mean must
// be finite and std finite and >= 0, as float32s. Keys as for RandUniform. The float32 mapping of
// the draws (cpu.RandNormal: u1 from 23 bits, centred in (0, 1), u2 from 24 bits) is this
// package's, not the reference's (which maps them in double precision): the values agree with
// TorchLean's to about 1e-5 except in rare draws, and |z| <= sqrt(-2 ln 2^-24) ~ 5.77 standard
// deviations (TorchLean: 6.66).
func RandNormal(d *Device, n int, mean, std float64, key uint64) (*Buffer, error) {
	if err := checkNormal(mean, std); err != nil {
		return nil, err
	}
	return normalOp.run(d, n, drawKey{key: key}, mean, std)
}

func checkNormal(mean, std float64) error {
	if !finite(mean) || !nonNegative(float64(float32(std))) {
		return fmt.Errorf("ops: %s: mean %v, std %v (want finite as float32s, std >= 0)", normalOp.name, mean, std)
	}
	return nil
}
