package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// convTestGeom builds a geometry array for the given spatial sizes (right-aligned) and returns
// it with the output sizes' product.
func convTestGeom(in, k, s, p, d []int) ([]uint32, *convGeom) {
	geom := make([]uint32, ConvGeomLen)
	for a := range ConvMaxRank {
		geom[a], geom[8+a], geom[16+a], geom[24+a], geom[32+a], geom[40+a] = 1, 1, 1, 1, 0, 1
	}
	off := ConvMaxRank - len(in)
	for a := range in {
		span := d[a]*(k[a]-1) + 1
		out := 0
		if in[a]+2*p[a] >= span {
			out = (in[a]+2*p[a]-span)/s[a] + 1
		}
		geom[off+a], geom[8+off+a], geom[16+off+a] = uint32(in[a]), uint32(out), uint32(k[a])
		geom[24+off+a], geom[32+off+a], geom[40+off+a] = uint32(s[a]), uint32(p[a]), uint32(d[a])
	}
	return geom, newConvGeom(geom)
}

func convTestData(r *rand.Rand, n int, special bool) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
		if special && r.IntN(40) == 0 {
			v[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 0}[r.IntN(5)]
		}
	}
	return v
}

func convSameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		g, w := got[i], want[i]
		if g != g && w != w {
			continue
		}
		if math.Float32bits(g) != math.Float32bits(w) {
			t.Fatalf("%s: element %d: got %v (%#x), want %v (%#x)", what, i, g, math.Float32bits(g), w, math.Float32bits(w))
		}
	}
}

// TestConvGemmMatchesDirect checks that the implicit-GEMM paths give the plain loops' bits, for
// every micro-kernel this CPU has, over random geometries (rank 1 to 3, strides, padding,
// dilation, groups, NaN and infinities) with small cache blocks so that K blocks and panel
// edges are crossed.
func TestConvGemmMatchesDirect(t *testing.T) {
	if len(gemmKernels) == 0 {
		t.Skip("no SGEMM micro-kernel on this CPU or build")
	}
	defer func(kc, mc, nc, mp int) { gemmKC, gemmMC, gemmNC, gemmMinParallel = kc, mc, nc, mp }(gemmKC, gemmMC, gemmNC, gemmMinParallel)
	gemmKC, gemmMC, gemmNC, gemmMinParallel = 7, 20, 40, 1
	r := rand.New(rand.NewPCG(1, 2))
	for _, kern := range gemmKernels {
		restore, _ := setGemmKernel(kern.name)
		gemmKC = 7
		for trial := range 66 {
			rank := 1 + trial%3
			long := trial >= 60 // one long axis and K blocks longer than packRunMax
			if long {
				rank, gemmKC = 1, 100
			}
			in, k, s, p, d := make([]int, rank), make([]int, rank), make([]int, rank), make([]int, rank), make([]int, rank)
			for a := range rank {
				in[a] = 1 + r.IntN(9)
				if long {
					in[a] = 65 + r.IntN(140)
				}
				k[a] = 1 + r.IntN(4)
				s[a] = 1 + r.IntN(3)
				p[a] = r.IntN(3)
				d[a] = 1 + r.IntN(2)
			}
			groups := 1 + r.IntN(3)
			cin, cout := groups*(1+r.IntN(3)), groups*(1+r.IntN(4))
			batch := r.IntN(3)
			geom, g := convTestGeom(in, k, s, p, d)
			special := trial%4 == 3
			x := convTestData(r, batch*cin*g.inProd, special)
			w := convTestData(r, cout*cin/groups*g.kProd, special)
			bias := convTestData(r, max(cout, cin), special)
			dy := convTestData(r, batch*cout*g.outProd, special)
			name := fmt.Sprintf("%s/in%v k%v s%v p%v d%v g%d cin%d cout%d n%d", kern.name, in, k, s, p, d, groups, cin, cout, batch)

			y := make([]float32, batch*cout*g.outProd)
			ConvFwd(y, x, w, bias, geom, batch, cin, cout, groups, g.inProd, g.outProd, g.kProd, trial%2 == 0)
			want := make([]float32, len(y))
			convFwdDirect(want, x, w, bias, g, batch, cin, cout, groups, trial%2 == 0, 0, len(want))
			convSameBits(t, name+" fwd", y, want)

			if g.outProd > 0 {
				dx := make([]float32, len(x))
				ConvBwdInput(dx, dy, w, bias, geom, batch, cin, cout, groups, g.inProd, g.outProd, g.kProd, trial%2 == 1)
				wantX := make([]float32, len(x))
				convBwdInputDirect(wantX, dy, w, bias, g, batch, cin, cout, groups, trial%2 == 1, 0, len(wantX))
				convSameBits(t, name+" dx", dx, wantX)
			}

			dw := make([]float32, len(w))
			ConvBwdWeight(dw, x, dy, geom, batch, cin, cout, groups, g.inProd, g.outProd, g.kProd)
			wantW := make([]float32, len(w))
			if batch > 0 && g.outProd > 0 {
				convBwdWeightDirect(wantW, x, dy, g, batch, cin, cout, groups, 0, len(wantW))
			}
			convSameBits(t, name+" dw", dw, wantW)
		}
		restore()
	}
}

// TestConvShiftMatchesDirect checks the stride-1 path that reads the patches in place
// (shiftConv) against the plain loops, bit for bit: random geometries of rank 1 to 3 with
// padding 0 to 3 (beyond the kernel's reach too, where the input gradient takes the packing
// path), dilation, groups, batch 0 to 3 (batch 1: the columns split over the cores), NaN and
// infinities, with small K blocks and column blocks so that every block edge is crossed.
func TestConvShiftMatchesDirect(t *testing.T) {
	defer func(kc, sb, wb, mp int) {
		gemmKC, shiftBlock, shiftWGBox, gemmMinParallel = kc, sb, wb, mp
	}(gemmKC, shiftBlock, shiftWGBox, gemmMinParallel)
	gemmMinParallel = 1
	ran := 0
	for _, k := range gemmKernels {
		if k.fi == nil || k.fss == nil {
			continue
		}
		restore, _ := setGemmKernel(k.name)
		checkConvShift(t, k)
		restore()
		ran++
	}
	if ran == 0 {
		t.Skip("no micro-kernel with in-place patch reads on this CPU or build")
	}
}

// checkConvShift is TestConvShiftMatchesDirect on the micro-kernel k (active).
func checkConvShift(t *testing.T, k *gemmKernel) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	taken, inPlaceDx := 0, 0
	for trial := range 120 {
		gemmKC, shiftBlock = []int{7, 256}[trial%2], []int{k.nr, 2 * k.nr, 512}[trial%3]
		shiftWGBox = []int{1, 300, 1 << 20}[trial%3] // the weight gradient's sample chunks: 1, a few, all
		rank := 1 + trial%3
		in, kern, s, p, d := make([]int, rank), make([]int, rank), make([]int, rank), make([]int, rank), make([]int, rank)
		for a := range rank {
			in[a], kern[a], s[a], p[a], d[a] = 1+r.IntN(12), 1+r.IntN(4), 1, r.IntN(4), 1+r.IntN(2)
		}
		if trial%10 == 9 { // the CNN's layers: 3x3, padding 1
			rank, in, kern, s, p, d = 2, []int{14 + r.IntN(15), 14 + r.IntN(15)}, []int{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}
		}
		groups := 1 + r.IntN(2)
		cin, cout := groups*(1+r.IntN(17)), groups*(1+r.IntN(33))
		batch := r.IntN(4)
		geom, g := convTestGeom(in, kern, s, p, d)
		if g.outProd == 0 {
			continue
		}
		if !g.inPlace(true) {
			t.Fatalf("in%v k%v p%v d%v: the in-place paths do not take this stride-1 geometry", in, kern, p, d)
		}
		if g.padWithinKernel() {
			inPlaceDx++
		}
		taken++
		special := trial%4 == 3
		x := convTestData(r, batch*cin*g.inProd, special)
		w := convTestData(r, cout*cin/groups*g.kProd, special)
		bias := convTestData(r, max(cout, cin), special)
		dy := convTestData(r, batch*cout*g.outProd, special)
		name := fmt.Sprintf("%s/in%v k%v p%v d%v g%d cin%d cout%d n%d kc%d block%d", k.name, in, kern, p, d, groups, cin, cout, batch, gemmKC, shiftBlock)
		y := unwritten(batch * cout * g.outProd)
		ConvFwd(y, x, w, bias, geom, batch, cin, cout, groups, g.inProd, g.outProd, g.kProd, trial%2 == 0)
		want := make([]float32, len(y))
		convFwdDirect(want, x, w, bias, g, batch, cin, cout, groups, trial%2 == 0, 0, len(want))
		convSameBits(t, name+" fwd", y, want)
		dx := unwritten(len(x))
		ConvBwdInput(dx, dy, w, bias, geom, batch, cin, cout, groups, g.inProd, g.outProd, g.kProd, trial%2 == 1)
		wantX := make([]float32, len(x))
		convBwdInputDirect(wantX, dy, w, bias, g, batch, cin, cout, groups, trial%2 == 1, 0, len(wantX))
		convSameBits(t, name+" dx", dx, wantX)
		dw := unwritten(len(w))
		ConvBwdWeight(dw, x, dy, geom, batch, cin, cout, groups, g.inProd, g.outProd, g.kProd)
		wantW := make([]float32, len(w))
		if batch > 0 {
			convBwdWeightDirect(wantW, x, dy, g, batch, cin, cout, groups, 0, len(wantW))
		}
		convSameBits(t, name+" dw", dw, wantW)
	}
	if taken < 100 || inPlaceDx < 50 {
		t.Fatalf("only %d geometries with outputs, %d of them with the input gradient in place", taken, inPlaceDx)
	}
}

// unwritten returns n floats of 12345, a value no output of the tests has: a kernel must write
// every element.
func unwritten(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 12345
	}
	return v
}

// TestConvDirectAgainstFloat64 checks the plain loops against a float64 reference of the
// mathematical convolution (within float32 rounding of the sums).
func TestConvDirectAgainstFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	in, k, s, p, d := []int{7, 6}, []int{3, 2}, []int{2, 1}, []int{1, 2}, []int{1, 2}
	geom, g := convTestGeom(in, k, s, p, d)
	batch, cin, cout, groups := 2, 4, 6, 2
	x := convTestData(r, batch*cin*g.inProd, false)
	w := convTestData(r, cout*cin/groups*g.kProd, false)
	dy := convTestData(r, batch*cout*g.outProd, false)
	y := make([]float32, batch*cout*g.outProd)
	ConvFwd(y, x, w, nil, geom, batch, cin, cout, groups, g.inProd, g.outProd, g.kProd, false)
	dx := make([]float32, len(x))
	ConvBwdInput(dx, dy, w, nil, geom, batch, cin, cout, groups, g.inProd, g.outProd, g.kProd, false)
	dw := make([]float32, len(w))
	ConvBwdWeight(dw, x, dy, geom, batch, cin, cout, groups, g.inProd, g.outProd, g.kProd)
	oh, ow := g.out[6], g.out[7]
	ry := make([]float64, len(y))
	rdx := make([]float64, len(x))
	rdw := make([]float64, len(w))
	cing, coutg := cin/groups, cout/groups
	for n := range batch {
		for co := range cout {
			grp := co / coutg
			for i := range oh {
				for j := range ow {
					yi := ((n*cout+co)*oh+i)*ow + j
					for c := range cing {
						for a := range k[0] {
							for b := range k[1] {
								hi, wi := i*s[0]-p[0]+a*d[0], j*s[1]-p[1]+b*d[1]
								if hi < 0 || hi >= in[0] || wi < 0 || wi >= in[1] {
									continue
								}
								xi := ((n*cin+grp*cing+c)*in[0]+hi)*in[1] + wi
								wk := ((co*cing+c)*k[0]+a)*k[1] + b
								ry[yi] += float64(x[xi]) * float64(w[wk])
								rdx[xi] += float64(dy[yi]) * float64(w[wk])
								rdw[wk] += float64(dy[yi]) * float64(x[xi])
							}
						}
					}
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		got  []float32
		want []float64
	}{{"y", y, ry}, {"dx", dx, rdx}, {"dw", dw, rdw}} {
		for i := range c.want {
			if math.Abs(float64(c.got[i])-c.want[i]) > 1e-4*math.Max(1, math.Abs(c.want[i])) {
				t.Fatalf("%s[%d] = %v, want %v", c.name, i, c.got[i], c.want[i])
			}
		}
	}
}

// BenchmarkConvShift times the stride-1 forward, input gradient and weight gradient on the
// paths that read the patches in place (shift) against the packing paths (pack), per
// micro-kernel that has both (avx512, avx2), on the
// Fashion-MNIST CNN's two convolutions (batch 64), issue 26's C64 56x56 K64 and ResNet-18's
// C256 14x14 at batch 8, all 3x3 with padding 1.
func BenchmarkConvShift(b *testing.B) {
	for _, k := range gemmKernels {
		if k.fi == nil || k.fss == nil {
			continue
		}
		restore, _ := setGemmKernel(k.name)
		b.Run(k.name, benchConvShift)
		restore()
	}
}

// benchConvShift is BenchmarkConvShift on the active micro-kernel.
func benchConvShift(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name                 string
		batch, cin, cout, hw int
	}{
		{"cnn1/n64c1k16/28x28", 64, 1, 16, 28},
		{"cnn2/n64c16k32/14x14", 64, 16, 32, 14},
		{"n8c64k64/56x56", 8, 64, 64, 56},
		{"n8c256k256/14x14", 8, 256, 256, 14}, // the weight gradient takes the packing path (shiftWGMaxCout)
	} {
		geom, g := convTestGeom([]int{c.hw, c.hw}, []int{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1})
		x := convTestData(r, c.batch*c.cin*g.inProd, false)
		w := convTestData(r, c.cout*c.cin*g.kProd, false)
		dy := convTestData(r, c.batch*c.cout*g.outProd, false)
		y, dx, dw := make([]float32, len(dy)), make([]float32, len(x)), make([]float32, len(w))
		for _, path := range []string{"shift", "pack"} {
			for _, op := range []struct {
				name string
				f    func()
			}{
				{"fwd", func() { ConvFwd(y, x, w, nil, geom, c.batch, c.cin, c.cout, 1, g.inProd, g.outProd, g.kProd, false) }},
				{"bwd_input", func() {
					ConvBwdInput(dx, dy, w, nil, geom, c.batch, c.cin, c.cout, 1, g.inProd, g.outProd, g.kProd, false)
				}},
				{"bwd_weight", func() { ConvBwdWeight(dw, x, dy, geom, c.batch, c.cin, c.cout, 1, g.inProd, g.outProd, g.kProd) }},
			} {
				b.Run(c.name+"/"+op.name+"/"+path, func(b *testing.B) {
					convShiftOff = path == "pack"
					defer func() { convShiftOff = false }()
					for b.Loop() {
						op.f()
					}
				})
			}
		}
	}
}

// TestConvBwdBiasOrder checks ConvBwdBias (four channels' chains side by side) against its
// contract's single loop, bit for bit, over ranges that start and end anywhere.
func TestConvBwdBiasOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		batch, cout, outProd := r.IntN(4), 1+r.IntN(11), r.IntN(40)
		dy := convTestData(r, batch*cout*outProd, trial%3 == 0)
		lo := r.IntN(cout)
		hi := lo + r.IntN(cout-lo+1)
		got := unwritten(cout)
		ConvBwdBias(got, dy, batch, cout, outProd, lo, hi)
		want := unwritten(cout) // outside [lo, hi): left as it is
		for co := lo; co < hi; co++ {
			acc := float32(0)
			for n := range batch {
				for o := range outProd {
					acc = acc + dy[(n*cout+co)*outProd+o]
				}
			}
			want[co] = acc
		}
		convSameBits(t, fmt.Sprintf("batch %d cout %d outProd %d [%d, %d)", batch, cout, outProd, lo, hi), got, want)
	}
}

// TestConvShiftSizesDisagree checks that a stride-1 geometry whose output sizes are not in +
// 2*pad - (k-1)*dil (the cpu API does not check them) takes the packing path and gives the
// plain loops' bits, instead of reading the patches in place under a wrong grid.
func TestConvShiftSizesDisagree(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	geom, _ := convTestGeom([]int{5}, []int{2}, []int{1}, []int{0}, []int{2})
	geom[8+ConvMaxRank-1] = 4 // the formula gives 3
	g := newConvGeom(geom)
	if g.readsInPlace() {
		t.Fatal("readsInPlace with an output size off the formula")
	}
	x, w, dy := convTestData(r, 2*g.inProd, false), convTestData(r, 6*g.kProd, false), convTestData(r, 3*g.outProd, false)
	y, want := make([]float32, 3*g.outProd), make([]float32, 3*g.outProd)
	ConvFwd(y, x, w, nil, geom, 1, 2, 3, 1, g.inProd, g.outProd, g.kProd, false)
	convFwdDirect(want, x, w, nil, g, 1, 2, 3, 1, false, 0, len(want))
	convSameBits(t, "fwd", y, want)
	dx, wantX := make([]float32, len(x)), make([]float32, len(x))
	ConvBwdInput(dx, dy, w, nil, geom, 1, 2, 3, 1, g.inProd, g.outProd, g.kProd, false)
	convBwdInputDirect(wantX, dy, w, nil, g, 1, 2, 3, 1, false, 0, len(wantX))
	convSameBits(t, "dx", dx, wantX)
	dw, wantW := make([]float32, len(w)), make([]float32, len(w))
	ConvBwdWeight(dw, x, dy, geom, 1, 2, 3, 1, g.inProd, g.outProd, g.kProd)
	convBwdWeightDirect(wantW, x, dy, g, 1, 2, 3, 1, 0, len(wantW))
	convSameBits(t, "dw", dw, wantW)
}
