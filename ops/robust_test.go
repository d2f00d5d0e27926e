//go:build linux && (amd64 || arm64) && !nocuda && !race

package ops

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/driver"
)

// robustDevice is the device TestRobustOps draws new buffers on.
var robustDevice = cpuDevice

// robustEnv draws the random arguments of TestRobustOps.
type robustEnv struct {
	r     *rand.Rand
	pool  []*Buffer
	other *Buffer // on the fake device
	rel   *Buffer
}

// robustSizes are the sizes robustEnv.size draws from a third of the time.
var robustSizes = []int{-1, -7, 0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 1 << 33, 1<<34 + 1, 1 << 46, 1<<46 + 1, 1 << 62, math.MaxInt, math.MinInt, 1 << 40, 1 << 16, 1<<31 - 1}

func (e *robustEnv) size() int {
	if e.r.Intn(3) == 0 {
		return robustSizes[e.r.Intn(len(robustSizes))]
	}
	return []int{0, 1, 2, 3, 4, 6}[e.r.Intn(6)]
}

// axis returns an axis or depth argument: mostly near the ranks of dims, sometimes extreme
// (a bound written as axis+1 < rank overflows there).
func (e *robustEnv) axis() int {
	if e.r.Intn(6) == 0 {
		return []int{math.MaxInt, math.MaxInt - 1, math.MinInt, 1 << 40, -1 << 40}[e.r.Intn(5)]
	}
	return e.r.Intn(12) - 2
}

func (e *robustEnv) buf() *Buffer {
	switch e.r.Intn(20) {
	case 0:
		return nil
	case 1:
		return &Buffer{}
	case 2:
		return e.rel
	case 3:
		return e.other
	}
	return e.pool[e.r.Intn(len(e.pool))]
}

func (e *robustEnv) dims() []int {
	n := e.r.Intn(10)
	if e.r.Intn(5) == 0 {
		n = 0
	}
	d := make([]int, n)
	for i := range d {
		if e.r.Intn(6) == 0 {
			d[i] = e.size()
		} else {
			d[i] = []int{1, 1, 2, 3, 0, 4}[e.r.Intn(6)]
		}
	}
	if e.r.Intn(10) == 0 {
		return nil
	}
	return d
}

func (e *robustEnv) axisMap(out, in int) []int {
	n := out
	if e.r.Intn(6) == 0 {
		n = e.r.Intn(10)
	}
	m := make([]int, n)
	for i := range m {
		m[i] = e.r.Intn(in+3) - 1
	}
	// often valid-ish: increasing
	if e.r.Intn(2) == 0 {
		k := 1
		for i := range m {
			if e.r.Intn(2) == 0 && k <= in {
				m[i] = k
				k++
			} else {
				m[i] = 0
			}
		}
	}
	return m
}

func (e *robustEnv) idx() []int {
	n := e.r.Intn(6)
	if e.r.Intn(8) == 0 {
		return nil
	}
	ix := make([]int, n)
	for i := range ix {
		switch e.r.Intn(10) {
		case 0:
			ix[i] = -1
		case 1:
			ix[i] = math.MaxUint32
		case 2:
			ix[i] = math.MaxUint32 + 1
		case 3:
			ix[i] = 1 << 40
		default:
			ix[i] = e.r.Intn(8)
		}
	}
	return ix
}

func (e *robustEnv) f() float64 {
	return []float64{0, 1, -1, 0.5, 1e-6, math.NaN(), math.Inf(1), math.Inf(-1), 1e39, -1e39, 1e-50, 2}[e.r.Intn(12)]
}

func (e *robustEnv) indices() *Indices {
	switch e.r.Intn(6) {
	case 0:
		return nil
	case 1:
		return &Indices{}
	}
	ix, err := NewIndices(robustDevice, e.idx())
	if err != nil {
		return nil
	}
	if e.r.Intn(6) == 0 {
		ix.Release()
	}
	return ix
}

type robustOp struct {
	name string
	run  func(e *robustEnv) ([]*Buffer, error)
}

func one(b *Buffer, err error) ([]*Buffer, error)         { return []*Buffer{b}, err }
func two(a, b *Buffer, err error) ([]*Buffer, error)      { return []*Buffer{a, b}, err }
func three(a, b, c *Buffer, err error) ([]*Buffer, error) { return []*Buffer{a, b, c}, err }

func robustOps() []robustOp {
	un := map[string]func(*Buffer) (*Buffer, error){"Abs": Abs, "Sqrt": Sqrt, "Exp": Exp, "Log": Log, "Inv": Inv, "Relu": Relu, "Sigmoid": Sigmoid, "Tanh": Tanh, "Softplus": Softplus, "Gelu": Gelu, "Copy": Copy, "Sum": Sum, "Mean": Mean}
	bin := map[string]func(a, b *Buffer) (*Buffer, error){"Add": Add, "Sub": Sub, "Mul": Mul, "Div": Div, "Max": Max, "Min": Min, "AbsBwd": AbsBwd, "SqrtBwd": SqrtBwd, "ReluBwd": ReluBwd, "ExpBwd": ExpBwd, "LogBwd": LogBwd, "InvBwd": InvBwd, "SigmoidBwd": SigmoidBwd, "TanhBwd": TanhBwd, "SoftplusBwd": SoftplusBwd, "GeluBwd": GeluBwd}
	tri := map[string]func(a, b, g *Buffer) (*Buffer, *Buffer, error){"MaxBwd": MaxBwd, "MinBwd": MinBwd, "MulBwd": MulBwd, "DivBwd": DivBwd}
	rc := map[string]func(x *Buffer, r, c int) (*Buffer, error){"ReduceMaxByColumn": ReduceMaxByColumn, "ReduceMaxByRow": ReduceMaxByRow, "ReduceMeanByColumn": ReduceMeanByColumn, "ReduceMeanByRow": ReduceMeanByRow, "ReduceSumByColumn": ReduceSumByColumn, "ReduceSumByRow": ReduceSumByRow, "Softmax": Softmax, "LogSoftmax": LogSoftmax, "Transpose2d": Transpose2d, "BroadcastVecToCols": BroadcastVecToCols, "BroadcastVecToRows": BroadcastVecToRows}
	rc2 := map[string]func(x, y *Buffer, r, c int) (*Buffer, error){"MaskedSoftmax": MaskedSoftmax, "SoftmaxBwd": SoftmaxBwd, "LogSoftmaxBwd": LogSoftmaxBwd}
	var ops []robustOp
	for n, f := range un {
		ops = append(ops, robustOp{n, func(e *robustEnv) ([]*Buffer, error) { return one(f(e.buf())) }})
	}
	for n, f := range bin {
		ops = append(ops, robustOp{n, func(e *robustEnv) ([]*Buffer, error) { return one(f(e.buf(), e.buf())) }})
	}
	for n, f := range tri {
		ops = append(ops, robustOp{n, func(e *robustEnv) ([]*Buffer, error) { return two(f(e.buf(), e.buf(), e.buf())) }})
	}
	for n, f := range rc {
		ops = append(ops, robustOp{n, func(e *robustEnv) ([]*Buffer, error) { return one(f(e.buf(), e.size(), e.size())) }})
	}
	for n, f := range rc2 {
		ops = append(ops, robustOp{n, func(e *robustEnv) ([]*Buffer, error) { return one(f(e.buf(), e.buf(), e.size(), e.size())) }})
	}
	ops = append(ops,
		robustOp{"SafeLog", func(e *robustEnv) ([]*Buffer, error) { return one(SafeLog(e.buf(), e.f())) }},
		robustOp{"SafeLogBwd", func(e *robustEnv) ([]*Buffer, error) { return one(SafeLogBwd(e.buf(), e.buf(), e.f())) }},
		robustOp{"Scale", func(e *robustEnv) ([]*Buffer, error) { return one(Scale(e.buf(), e.f())) }},
		robustOp{"Clamp", func(e *robustEnv) ([]*Buffer, error) { return one(Clamp(e.buf(), e.f(), e.f())) }},
		robustOp{"ClampBwd", func(e *robustEnv) ([]*Buffer, error) { return one(ClampBwd(e.buf(), e.buf(), e.f(), e.f())) }},
		robustOp{"Axpy", func(e *robustEnv) ([]*Buffer, error) { return one(Axpy(e.buf(), e.buf(), e.f())) }},
		robustOp{"Concat1d", func(e *robustEnv) ([]*Buffer, error) { return one(Concat1d(e.buf(), e.buf(), e.size(), e.size())) }},
		robustOp{"ConcatN", func(e *robustEnv) ([]*Buffer, error) { return one(ConcatN(e.buf(), e.buf(), e.buf())) }},
		robustOp{"Slice1d", func(e *robustEnv) ([]*Buffer, error) { return one(Slice1d(e.buf(), e.size(), e.size(), e.size())) }},
		robustOp{"Bmm", func(e *robustEnv) ([]*Buffer, error) {
			return one(Bmm(e.buf(), e.buf(), e.size(), e.size(), e.size(), e.size()))
		}},
		robustOp{"BmmT", func(e *robustEnv) ([]*Buffer, error) {
			return one(BmmWithTranspose(e.buf(), e.buf(), e.size(), e.size(), e.size(), e.size(), e.r.Intn(2) == 0, e.r.Intn(2) == 0))
		}},
		robustOp{"Matmul", func(e *robustEnv) ([]*Buffer, error) {
			return one(Matmul(e.buf(), e.buf(), e.size(), e.size(), e.size()))
		}},
		robustOp{"BroadcastTo", func(e *robustEnv) ([]*Buffer, error) {
			in, out := e.dims(), e.dims()
			return one(BroadcastTo(e.buf(), in, out, e.axisMap(len(out), len(in))))
		}},
		robustOp{"ReduceFromBroadcastTo", func(e *robustEnv) ([]*Buffer, error) {
			in, out := e.dims(), e.dims()
			return one(ReduceFromBroadcastTo(e.buf(), in, out, e.axisMap(len(out), len(in))))
		}},
		robustOp{"ReduceSumAxis", func(e *robustEnv) ([]*Buffer, error) { return one(ReduceSumAxis(e.buf(), e.dims(), e.axis())) }},
		robustOp{"ReduceMeanAxis", func(e *robustEnv) ([]*Buffer, error) { return one(ReduceMeanAxis(e.buf(), e.dims(), e.axis())) }},
		robustOp{"SwapAdjacentAtDepth", func(e *robustEnv) ([]*Buffer, error) {
			return one(SwapAdjacentAtDepth(e.buf(), e.dims(), e.axis()))
		}},
		robustOp{"GatherRows", func(e *robustEnv) ([]*Buffer, error) { return one(GatherRows(e.buf(), e.size(), e.size(), e.idx())) }},
		robustOp{"GatherVec", func(e *robustEnv) ([]*Buffer, error) { return one(GatherVec(e.buf(), e.size(), e.idx())) }},
		robustOp{"GatherRowsIdx", func(e *robustEnv) ([]*Buffer, error) {
			ix := e.indices()
			defer ix.Release()
			return one(GatherRowsIdx(e.buf(), e.size(), e.size(), ix))
		}},
		robustOp{"ScatterAdd", func(e *robustEnv) ([]*Buffer, error) { return one(ScatterAdd(e.buf(), e.buf(), e.size(), e.idx())) }},
		robustOp{"ScatterAddRow", func(e *robustEnv) ([]*Buffer, error) {
			return one(ScatterAddRow(e.buf(), e.buf(), e.size(), e.size(), e.size()))
		}},
		robustOp{"ScatterAddRows", func(e *robustEnv) ([]*Buffer, error) {
			return one(ScatterAddRows(e.buf(), e.buf(), e.size(), e.size(), e.idx()))
		}},
		robustOp{"ScatterAddRowsIdx", func(e *robustEnv) ([]*Buffer, error) {
			ix := e.indices()
			defer ix.Release()
			return one(ScatterAddRowsIdx(e.buf(), e.buf(), e.size(), e.size(), ix))
		}},
		robustOp{"LayerNormFwd", func(e *robustEnv) ([]*Buffer, error) {
			return three(LayerNormFwd(e.buf(), e.buf(), e.buf(), e.size(), e.size(), e.f()))
		}},
		robustOp{"LayerNormBwd", func(e *robustEnv) ([]*Buffer, error) {
			return three(LayerNormBwd(e.buf(), e.buf(), e.buf(), e.buf(), e.buf(), e.size(), e.size()))
		}},
		robustOp{"Full", func(e *robustEnv) ([]*Buffer, error) { return one(Full(e.dev(), e.size(), e.f())) }},
		robustOp{"Zeros", func(e *robustEnv) ([]*Buffer, error) { return one(Zeros(e.dev(), e.size())) }},
		robustOp{"RandUniform", func(e *robustEnv) ([]*Buffer, error) { return one(RandUniform(e.dev(), e.size(), e.r.Uint64())) }},
		robustOp{"RandNormal", func(e *robustEnv) ([]*Buffer, error) {
			return one(RandNormal(e.dev(), e.size(), e.f(), e.f(), e.r.Uint64()))
		}},
		robustOp{"BernoulliMask", func(e *robustEnv) ([]*Buffer, error) {
			return one(BernoulliMask(e.dev(), e.size(), e.f(), e.r.Uint64()))
		}},
		robustOp{"To", func(e *robustEnv) ([]*Buffer, error) { return one(e.buf().To(e.dev())) }},
		robustOp{"Float32s", func(e *robustEnv) ([]*Buffer, error) { _, err := e.buf().Float32s(); return nil, err }},
		robustOp{"SGDStep", func(e *robustEnv) ([]*Buffer, error) {
			p := SGDParams{LR: e.f(), Momentum: e.f(), Dampening: e.f(), WeightDecay: e.f(), Nesterov: e.r.Intn(2) == 0}
			return nil, SGDStep(e.buf(), e.buf(), e.buf(), p, e.r.Intn(2) == 0)
		}},
		robustOp{"AdamStep", func(e *robustEnv) ([]*Buffer, error) {
			p := AdamParams{LR: e.f(), Beta1: e.f(), Beta2: e.f(), Eps: e.f(), WeightDecay: e.f(), Decoupled: e.r.Intn(2) == 0}
			return nil, AdamStep(e.buf(), e.buf(), e.buf(), e.buf(), p, e.size())
		}},
	)
	return ops
}

func (e *robustEnv) dev() *Device {
	switch e.r.Intn(10) {
	case 0:
		return nil
	case 1:
		return &Device{}
	}
	return robustDevice
}

// robustIters is how many random calls TestRobustOps makes of each op on each device
// (TORCHLEAN_ROBUST_ITERS raises it for a long run).
func robustIters() int {
	if v, err := strconv.Atoi(os.Getenv("TORCHLEAN_ROBUST_ITERS")); err == nil && v > 0 {
		return v
	}
	return 300
}

// TestRobustOps calls every exported op with random arguments, mostly bad ones (nil, zero,
// released and other-device buffers, negative, huge and overflowing sizes, bad axes, dims and
// indices, NaN and infinite scalars): no call may panic, return a result with an error, or give
// an error that does not name the package, and the device's live bytes must come back after
// each call. Sizes that a machine with enough memory would allocate (over a GiB of floats and
// within maxBufferLen: 2^31 - 1, 2^33, 2^34 + 1, 2^40, 2^46) take part only under
// TORCHLEAN_ROBUST_BIG=1, a long run for such a machine (it found the CPU guard counting freed
// heap memory that a large buffer could not reuse; on a 128 GiB host they took six minutes).
func TestRobustOps(t *testing.T) {
	if os.Getenv("TORCHLEAN_ROBUST_BIG") != "1" {
		robustSizes = slices.DeleteFunc(slices.Clone(robustSizes), func(n int) bool { return n > 1<<28 && n <= maxBufferLen })
	}
	fd, _ := newFakeDevice(t, driver.FakeOptions{})
	other, err := Full(fd, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	for _, d := range devices(t) {
		t.Run(d.Kind().String(), func(t *testing.T) {
			robustDevice = d
			defer func() { robustDevice = cpuDevice }()
			robustRun(t, d, other)
		})
	}
}

func robustRun(t *testing.T, d *Device, other *Buffer) {
	base := settledLiveBytes(d) // buffers an earlier test dropped are finalized first
	e := &robustEnv{r: rand.New(rand.NewSource(1)), other: other}
	for _, n := range []int{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 36} {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i%5) - 1.5
		}
		if n == 8 {
			v[3] = float32(math.NaN())
		}
		b, err := FromFloat32(d, v)
		if err != nil {
			t.Fatal(err)
		}
		e.pool = append(e.pool, b)
	}
	var err error
	if e.rel, err = Full(d, 4, 1); err != nil {
		t.Fatal(err)
	}
	e.rel.Release()
	poolBytes := settledLiveBytes(d)
	otherBytes := other.Device().Stats().LiveBytes
	succeeded := 0 // calls whose arguments happened to be valid
	defer func() { t.Logf("%d calls succeeded", succeeded) }()
	ops := robustOps()
	sort.Slice(ops, func(i, j int) bool { return ops[i].name < ops[j].name })
	for _, op := range ops {
		for range robustIters() {
			outs, err := robustCall(op, e)
			if err == nil {
				succeeded++
			}
			if err != nil && !strings.HasPrefix(err.Error(), "ops: ") {
				t.Errorf("%s: %v (want an error of this package, \"ops: ...\")", op.name, err)
			}
			for _, o := range outs {
				switch {
				case err != nil && o != nil:
					t.Errorf("%s: a result with the error %v", op.name, err)
				case err == nil && o == nil:
					t.Errorf("%s: no error and a nil result", op.name)
				}
				o.Release()
			}
			if lb, lo := d.Stats().LiveBytes, other.Device().Stats().LiveBytes; lb != poolBytes || lo != otherBytes {
				t.Fatalf("%s: live bytes %d (other device %d) after the call, %d (%d) before", op.name, lb, lo, poolBytes, otherBytes)
			}
		}
	}
	for _, b := range e.pool {
		b.Release()
	}
	if lb := d.Stats().LiveBytes; lb != base {
		t.Errorf("live bytes %d at the end, %d at the start", lb, base)
	}
}

// robustCall runs op once, turning a panic into an error that names it.
func robustCall(op robustOp, e *robustEnv) (outs []*Buffer, err error) {
	defer func() {
		if r := recover(); r != nil {
			outs, err = nil, fmt.Errorf("panicked: %v", r)
		}
	}()
	return op.run(e)
}
