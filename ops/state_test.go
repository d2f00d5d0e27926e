package ops

import (
	"math"
	"slices"
	"testing"
)

// TestCounter: Set, Add and Value of a device count, the 2^64 wraparound, and increments beyond
// the largest int.
func TestCounter(t *testing.T) {
	for _, d := range devices(t) {
		c, err := NewCounter(d, 1<<32-1)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Add(2); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Value(); err != nil || v != 1<<32+1 {
			t.Errorf("%s: %d after adding 2 to 2^32-1 (%v)", d, v, err)
		}
		if err := c.Set(1<<64 - 1); err != nil {
			t.Fatal(err)
		}
		if err := c.Add(3); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Value(); err != nil || v != 2 {
			t.Errorf("%s: %d after adding 3 to 2^64-1 (%v)", d, v, err)
		}
		big := uint64(1 << 40) // beyond the largest int of a 32-bit platform: several launches there
		if math.MaxInt > 1<<40 {
			big = 1 << 63 // one launch
		}
		for range 2 {
			if err := c.Add(big); err != nil {
				t.Fatal(err)
			}
		}
		if v, err := c.Value(); err != nil || v != 2+2*big {
			t.Errorf("%s: %d after adding %d twice to 2 (%v)", d, v, big, err)
		}
		if math.MaxInt < 1<<40 {
			if err := c.Add(1 << 63); err == nil {
				t.Errorf("%s: an increment of 2^63 taken on a 32-bit platform", d)
			}
		}
		if !c.Release() || c.Release() {
			t.Errorf("%s: Release not once", d)
		}
		if err := c.Add(1); err == nil {
			t.Errorf("%s: Add on a released counter", d)
		}
	}
}

// TestDrawAt: the draws keyed from a device count are the draws of the key KeyOf(seed, count +
// offset), and follow the count as it advances.
func TestDrawAt(t *testing.T) {
	const seed, n = 77, 1000
	for _, d := range devices(t) {
		c, err := NewCounter(d, 41)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		for round := range 2 {
			count := uint64(41 + 5*round)
			for _, k := range []struct {
				name string
				at   func() (*Buffer, error)
				key  func(key uint64) (*Buffer, error)
			}{
				{"uniform", func() (*Buffer, error) { return RandUniformAt(c, n, seed, 3) },
					func(key uint64) (*Buffer, error) { return RandUniform(d, n, key) }},
				{"bernoulli", func() (*Buffer, error) { return BernoulliMaskAt(c, n, 0.3, seed, 3) },
					func(key uint64) (*Buffer, error) { return BernoulliMask(d, n, 0.3, key) }},
				{"normal", func() (*Buffer, error) { return RandNormalAt(c, n, 1, 2, seed, 3) },
					func(key uint64) (*Buffer, error) { return RandNormal(d, n, 1, 2, key) }},
			} {
				a, err := k.at()
				got := download(t, a, err)
				b, err := k.key(KeyOf(seed, count+3))
				want := download(t, b, err)
				if !slices.Equal(got, want) {
					t.Errorf("%s %s: the draw at count %d + 3 is not the draw of KeyOf(seed, %d)", d, k.name, count, count+3)
				}
			}
			if err := c.Add(5); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := BernoulliMaskAt(c, n, 2, seed, 0); err == nil {
			t.Errorf("%s: keep 2 accepted", d)
		}
		if _, err := RandUniformAt(nil, n, seed, 0); err == nil {
			t.Errorf("%s: a nil counter accepted", d)
		}
	}
}

// TestAdamState: an Adam state over several tensors steps each one as AdamStep does at the same
// step number (a tensor left out of a Begin keeps its count), counts round-trip through
// SetSteps/Steps, and bad tensor lists are errors.
func TestAdamState(t *testing.T) {
	h := AdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 1e-2, Decoupled: true}
	for _, d := range devices(t) {
		o, err := NewAdam(d, 2)
		if err != nil {
			t.Fatal(err)
		}
		vals := func(v ...float32) *Buffer { return mustBuf(t, d, v) }
		p0, g0, m0, v0 := vals(1, -2, 3), vals(0.5, 0.25, -1), vals(0, 0, 0), vals(0, 0, 0)
		p1, g1, m1, v1 := vals(4, 5), vals(-1, 2), vals(0, 0), vals(0, 0)
		q0, n0, w0 := vals(1, -2, 3), vals(0, 0, 0), vals(0, 0, 0) // tensor 0 again, through AdamStep
		for step, list := range [][]int{{0, 1}, {0}, {1, 0}} {
			if err := o.Begin(h, list); err != nil {
				t.Fatal(err)
			}
			for _, k := range list {
				if k == 0 {
					err = o.Step(0, p0, g0, m0, v0)
				} else {
					err = o.Step(1, p1, g1, m1, v1)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := AdamStep(q0, g0, n0, w0, h, step+1); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := o.Steps(); err != nil || !slices.Equal(got, []uint64{3, 2}) {
			t.Errorf("%s: steps %v (%v), want [3 2]", d, got, err)
		}
		for k, pair := range [][2]*Buffer{{p0, q0}, {m0, n0}, {v0, w0}} {
			a, _ := pair[0].Float32s()
			b, _ := pair[1].Float32s()
			if !slices.Equal(a, b) {
				t.Errorf("%s: operand %d through the state %v, through AdamStep %v", d, k, a, b)
			}
		}
		if err := o.SetSteps([]uint64{7, 1 << 40}); err != nil {
			t.Fatal(err)
		}
		if got, err := o.Steps(); err != nil || !slices.Equal(got, []uint64{7, 1 << 40}) {
			t.Errorf("%s: steps %v (%v) after SetSteps", d, got, err)
		}
		for _, bad := range [][]int{{2}, {-1}, {1, 1}} {
			if err := o.Begin(h, bad); err == nil {
				t.Errorf("%s: Begin(%v) accepted", d, bad)
			}
		}
		if err := o.SetSteps([]uint64{1}); err == nil {
			t.Errorf("%s: SetSteps of one count for two tensors accepted", d)
		}
		ReleaseThen(nil, p0, g0, m0, v0, p1, g1, m1, v1, q0, n0, w0)
		o.Release()
	}
}
