package ops

import (
	"bytes"
	enc "encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// convHostShim emulates, in host C++, the CUDA constructs that ptx/conv.cu uses. A block's
// threads are coroutines (ucontext) run one after another up to each __syncthreads, phase by
// phase (in ascending thread order in every other launch, descending in the others, so that a
// read racing with another thread's write in one phase shows in one of the two), so every
// write before a barrier is seen after it; a block where some threads reach a
// barrier that others do not is an error (exit 3). Blocks run one after another, so that a
// static is the block's shared memory. __fmaf_rn is C's fmaf, rounded once, and nothing is
// contracted (-ffp-contract=off).
const convHostShim = `#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <ucontext.h>
#include <vector>
struct dim3 { unsigned x, y, z; };
struct alignas(16) float4 { float x, y, z, w; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
dim3 threadIdx, blockIdx, blockDim, gridDim;
namespace emu {
ucontext_t sched;
std::vector<ucontext_t> ctx;
std::vector<int> state;  // 0 runnable, 1 at a barrier, 2 done
std::vector<std::vector<char>> stacks;
std::function<void()> body;
unsigned cur;
void entry() {
  body();
  state[cur] = 2;
  swapcontext(&ctx[cur], &sched);
}
}  // namespace emu
inline void __syncthreads() {
  emu::state[emu::cur] = 1;
  swapcontext(&emu::ctx[emu::cur], &emu::sched);
}
inline float __fmaf_rn(float a, float b, float c) { return std::fmaf(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
template <class T> inline T __ldg(const T* p) { return *p; }
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
template <class F> void emuLaunch(unsigned blocks, unsigned threads, F f) {
  static unsigned launches;
  const bool reverse = launches++ % 2 == 1;  // every other launch runs its threads last to first
  gridDim = {blocks, 1, 1};
  blockDim = {threads, 1, 1};
  emu::body = f;
  emu::stacks.resize(threads);
  for (auto& s : emu::stacks) s.resize(1 << 18);
  for (unsigned b = 0; b < blocks; b++) {
    blockIdx = {b, 0, 0};
    emu::ctx.assign(threads, ucontext_t{});
    emu::state.assign(threads, 0);
    for (unsigned t = 0; t < threads; t++) {
      getcontext(&emu::ctx[t]);
      emu::ctx[t].uc_stack.ss_sp = emu::stacks[t].data();
      emu::ctx[t].uc_stack.ss_size = emu::stacks[t].size();
      emu::ctx[t].uc_link = nullptr;
      makecontext(&emu::ctx[t], emu::entry, 0);
    }
    for (;;) {
      unsigned done = 0;
      for (unsigned i = 0; i < threads; i++) {
        const unsigned t = reverse ? threads - 1 - i : i;
        if (emu::state[t] == 2) continue;
        emu::state[t] = 0;
        emu::cur = t;
        threadIdx = {t, 0, 0};
        swapcontext(&emu::sched, &emu::ctx[t]);
      }
      for (unsigned t = 0; t < threads; t++) done += emu::state[t] == 2;
      if (done == threads) break;
      if (done != 0) {
        fprintf(stderr, "block %u: %u of %u threads left before a barrier the others wait at\n", b, done, threads);
        exit(3);
      }
    }
  }
}
`

// convHostMain runs launch records from stdin: (kernel, blocks, threads as u32, the geometry's
// 48 u32, 8 sizes as u64, then the length (u64) and data of the output and of three inputs),
// writing each output's data to stdout.
const convHostMain = `#include "conv.cu"
#include <cstdio>
static bool rd(void* p, size_t n) { return fread(p, 1, n, stdin) == n; }
int main() {
  for (;;) {
    unsigned hdr[3];
    if (!rd(hdr, sizeof hdr)) return 0;
    std::vector<u32> geom(48);
    u64 s[8];
    if (!rd(geom.data(), 48 * 4) || !rd(s, sizeof s)) return 1;
    std::vector<float> a[4];
    for (int i = 0; i < 4; i++) {
      u64 n;
      if (!rd(&n, 8)) return 1;
      a[i].resize(n + 1);
      if (!rd(a[i].data(), n * 4)) return 1;
    }
    float *o = a[0].data(), *p = a[1].data(), *q = a[2].data(), *r = a[3].data();
    const u32* g = geom.data();
    emuLaunch(hdr[1], hdr[2], [&] {
      switch (hdr[0]) {
        case 0: conv_fwd(o, p, q, r, g, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]); break;
        case 1: conv_fwd_tile(o, p, q, r, g, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]); break;
        case 2: conv_bwd_input(o, p, q, r, g, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]); break;
        case 3: conv_bwd_input_tile(o, p, q, r, g, s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]); break;
        case 4: conv_bwd_weight(o, p, q, g, s[0], s[1], s[2], s[3], s[4], s[5], s[6]); break;
        case 5: conv_bwd_weight_tile(o, p, q, g, s[0], s[1], s[2], s[3], s[4], s[5], s[6]); break;
      }
    });
    fwrite(o, 4, a[0].size() - 1, stdout);
  }
}
`

// convHostBuild compiles ptx/conv.cu with the shim, or skips t when no C++20 compiler is found.
func convHostBuild(t *testing.T) string {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ to run ptx/conv.cu's logic on the host")
	}
	dir := t.TempDir()
	ptxDir, err := filepath.Abs("../ptx")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"shim.h": convHostShim, "main.cpp": convHostMain,
		"probe.cpp": "#include <ucontext.h>\nint main() { ucontext_t c; return getcontext(&c); }\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flags := []string{"-std=c++17"}
	probe := exec.Command(gxx, append(flags, "-o", filepath.Join(dir, "probe"), filepath.Join(dir, "probe.cpp"))...)
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("g++ cannot build with ucontext (%v): %s", err, out)
	}
	bin := filepath.Join(dir, "convhost")
	cmd := exec.Command(gxx, append(flags, "-O1", "-ffp-contract=off", "-fno-strict-aliasing", "-w",
		"-include", filepath.Join(dir, "shim.h"), "-I", ptxDir, "-o", bin, filepath.Join(dir, "main.cpp"))...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling ptx/conv.cu as host C++: %v\n%s", err, out)
	}
	return bin
}

// convHostLaunch is one emulated launch and the twin's result it must match bit for bit.
type convHostLaunch struct {
	name            string
	kernel          uint32 // convHostMain's case
	blocks, threads uint32
	geom            []uint32
	sizes           []int
	outLen          int
	ins             [3][]float32
	want            []float32
}

func (l *convHostLaunch) encode(w *bytes.Buffer) {
	le := enc.LittleEndian
	put := func(v any) { _ = enc.Write(w, le, v) }
	put([3]uint32{l.kernel, l.blocks, l.threads})
	put(l.geom)
	var s [8]uint64
	for i, v := range l.sizes {
		s[i] = uint64(v)
	}
	put(s)
	put(uint64(l.outLen))
	put(make([]float32, l.outLen))
	for _, in := range l.ins {
		put(uint64(len(in)))
		put(in)
	}
}

// convHostInputs returns n values: normal ones, a quarter of them +-0; with special, NaN and
// infinities at a few places too.
func convHostInputs(r *rand.Rand, n int, special bool) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch {
		case r.IntN(4) == 0:
			v[i] = float32(math.Copysign(0, float64(r.IntN(2)*2-1)))
		default:
			v[i] = float32(r.NormFloat64())
		}
	}
	if special && n > 0 {
		for _, s := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			v[r.IntN(n)] = s
		}
	}
	return v
}

// TestConvTilesHostCPP runs ptx/conv.cu's direct and tiled kernels as host C++ (coroutines
// emulating a block's threads; skips without g++) on the mirror geometries of rank <= 3 and
// more, in both views (the convolution and the one a transposed convolution runs), with signed
// zeros, NaN and infinities, and checks every output against the CPU twins bit for bit (NaN as
// any NaN: the GPU's are canonical). The tiled kernels run with the grid ops launches and with
// one block walking every tile.
func TestConvTilesHostCPP(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	start := time.Now()
	exe := convHostBuild(t)
	built := time.Since(start)
	type geo struct {
		d ConvDims
		p ConvParams
	}
	var geos []geo
	for _, m := range convMirrors {
		if len(m.d.Input) <= 3 && m.d.Batch > 0 {
			geos = append(geos, geo{m.d, m.p})
		}
	}
	geos = append(geos,
		// stride 3 on every axis of a 3-D problem (27 classes), dilation 2
		geo{ConvDims{Batch: 1, InChannels: 17, OutChannels: 18, Input: []int{4, 5, 3}, Kernel: []int{2, 3, 2}},
			ConvParams{Stride: []int{3}, Padding: []int{1}, Dilation: []int{2, 1, 2}, OutputPadding: []int{2}}},
		// a 1-D kernel of 9 with stride 4 (classes without terms), a long row
		geo{ConvDims{Batch: 1, InChannels: 16, OutChannels: 16, Input: []int{300}, Kernel: []int{9}},
			ConvParams{Stride: []int{4}, Padding: []int{4}, OutputPadding: []int{3}}},
		// a kernel larger than the input on one axis with padding, 7x7
		geo{ConvDims{Batch: 2, InChannels: 16, OutChannels: 17, Input: []int{5, 12}, Kernel: []int{7, 7}},
			ConvParams{Padding: []int{3}, Stride: []int{1, 2}}},
		// K exactly a multiple of the steps, rows exactly one tile
		geo{ConvDims{Batch: 2, InChannels: 16, OutChannels: 64, Input: []int{8, 8}, Kernel: []int{1, 1}}, ConvParams{}},
	)
	r := rand.New(rand.NewPCG(26, 3))
	var launches []*convHostLaunch
	var tiled [3]int
	direct := 0
	for gi, ge := range geos {
		for _, transposed := range []bool{false, true} {
			op := "conv"
			p := ge.p
			if transposed {
				op = "conv_transpose"
			} else {
				p.OutputPadding = nil
			}
			g, err := checkConv(op, ge.d, p, transposed)
			if err != nil {
				t.Fatal(err)
			}
			if g.xLen() == 0 || g.yLen() == 0 {
				continue
			}
			geom := g.geomArray(make([]uint32, cpu.ConvGeomLen))
			for _, special := range []bool{false, true} {
				x := convHostInputs(r, g.xLen(), special)
				w := convHostInputs(r, g.wLen(), special)
				dy := convHostInputs(r, g.yLen(), special)
				biasOut := convHostInputs(r, g.cout, special)
				biasIn := convHostInputs(r, g.cin, special)
				sz := g.sizes(true)
				szIn := g.sizes(gi%2 == 0)
				fwd := make([]float32, g.yLen())
				cpu.ConvFwd(fwd, x, w, biasOut, geom, sz[0], sz[1], sz[2], sz[3], sz[4], sz[5], sz[6], true)
				bin := make([]float32, g.xLen())
				cpu.ConvBwdInput(bin, dy, w, biasIn, geom, sz[0], sz[1], sz[2], sz[3], sz[4], sz[5], sz[6], szIn[7] != 0)
				bw := make([]float32, g.wLen())
				cpu.ConvBwdWeight(bw, x, dy, geom, sz[0], sz[1], sz[2], sz[3], sz[4], sz[5], sz[6])
				tag := fmt.Sprintf("%s n%d c%dx%d in%v k%v s%v p%v d%v g%d special=%v", op, g.batch, g.cin, g.cout,
					g.in, g.k, g.s, g.p, g.d, g.groups, special)
				add := func(name string, kernel uint32, blocks, threads int, sizes []int, outLen int, ins [3][]float32, want []float32) {
					launches = append(launches, &convHostLaunch{name: name + " " + tag, kernel: kernel, blocks: uint32(blocks),
						threads: uint32(threads), geom: geom, sizes: sizes, outLen: outLen, ins: ins, want: want})
				}
				fIns := [3][]float32{x, w, biasOut}
				iIns := [3][]float32{dy, w, biasIn}
				wIns := [3][]float32{x, dy, nil}
				if !special && g.xLen()+g.yLen() <= 1<<14 { // the direct kernels too, where they are quick
					add("conv_fwd", 0, 2, 64, sz, g.yLen(), fIns, fwd)
					add("conv_bwd_input", 2, 2, 64, szIn, g.xLen(), iIns, bin)
					add("conv_bwd_weight", 4, 2, 64, sz[:7], g.wLen(), wIns, bw)
					direct++
				}
				if !g.tileFits() {
					continue
				}
				for k, l := range []struct {
					op     *kernelOp
					name   string
					kernel uint32
					sizes  []int
					outLen int
					ins    [3][]float32
					want   []float32
				}{
					{convFwdTileOp, "conv_fwd_tile", 1, sz, g.yLen(), fIns, fwd},
					{convBwdInputTileOp, "conv_bwd_input_tile", 3, szIn, g.xLen(), iIns, bin},
					{convBwdWeightTileOp, "conv_bwd_weight_tile", 5, sz[:7], g.wLen(), wIns, bw},
				} {
					sh := l.op.grid.shape(nil, l.sizes, gpuFacts{sms: 132})
					if sh.kernel.Name != l.name {
						t.Fatalf("%s: the grid launches %s", l.name, sh.kernel.Name)
					}
					// ops's grid, or with special inputs 3 blocks walking several tiles each
					blocks := int(sh.grid[0])
					if special {
						blocks = min(blocks, 3)
					}
					add(l.name, l.kernel, blocks, int(sh.block[0]), l.sizes, l.outLen, l.ins, l.want)
					if !special {
						tiled[k]++
					}
				}
			}
		}
	}
	if direct < 10 {
		t.Errorf("only %d geometries on the direct kernels", direct)
	}
	for k, n := range tiled {
		if n < 10 {
			t.Errorf("only %d geometries on tiled kernel %d", n, k)
		}
	}
	var in bytes.Buffer
	for _, l := range launches {
		l.encode(&in)
	}
	cmd := exec.Command(exe)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start = time.Now()
	out, err := cmd.Output()
	ran := time.Since(start)
	if err != nil {
		t.Fatalf("host run: %v\n%s", err, stderr.Bytes())
	}
	off := 0
	for _, l := range launches {
		if off+4*l.outLen > len(out) {
			t.Fatalf("host run: output ends at %s", l.name)
		}
		bad := 0
		for i := range l.outLen {
			got := math.Float32frombits(enc.LittleEndian.Uint32(out[off+4*i:]))
			want := l.want[i]
			same := math.Float32bits(got) == math.Float32bits(want) || (got != got && want != want)
			if !same {
				if bad < 3 {
					t.Errorf("%s: [%d] = %v (%#08x), twin %v (%#08x)", l.name, i, got, math.Float32bits(got), want, math.Float32bits(want))
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d outputs differ", l.name, bad, l.outLen)
		}
		off += 4 * l.outLen
	}
	t.Logf("built in %v, ran in %v", built, ran)
	t.Logf("%d launches (%d geometries on the direct kernels, %d, %d, %d geometry variants on the fwd, input and weight tiles) matched the twins", len(launches), direct, tiled[0], tiled[1], tiled[2])
}

// TestConvTileChoice: the tiled kernels take the ResNet-18 convolutions at batch 64 in all three
// directions, and the direct kernels what the tiles cannot hold or would mostly waste
// (depthwise channels, rank 4, more kernel offsets than the table, 81 stride classes).
func TestConvTileChoice(t *testing.T) {
	for _, l := range convResNet18 {
		d := ConvDims{Batch: 64, InChannels: l.cin, OutChannels: l.cout, Input: []int{l.hw, l.hw}, Kernel: []int{l.k, l.k}}
		g, err := checkConv("conv", d, ConvParams{Stride: []int{l.s}, Padding: []int{l.p}}, false)
		if err != nil {
			t.Fatal(err)
		}
		fwd, in, w := convTileFwd(g), convTileBwdInput(g), convTileBwdWeight(g)
		if !fwd || !w || (!in && l.cin >= convTileMinCols) || (in && l.cin < convTileMinCols) {
			t.Errorf("%+v: tiles fwd %v, input gradient %v, weight gradient %v", l, fwd, in, w)
		}
	}
	for _, c := range []struct {
		d ConvDims
		p ConvParams
	}{
		{ConvDims{Batch: 64, InChannels: 256, OutChannels: 256, Input: []int{1024}, Kernel: []int{4}}, ConvParams{Padding: []int{3}, Groups: 256}},
		{ConvDims{Batch: 8, InChannels: 32, OutChannels: 32, Input: []int{6, 6, 6, 6}, Kernel: []int{3, 3, 3, 3}}, ConvParams{}},
		{ConvDims{Batch: 8, InChannels: 32, OutChannels: 32, Input: []int{16, 16, 16}, Kernel: []int{9, 9, 9}}, ConvParams{Padding: []int{4}}},
		{ConvDims{Batch: 8, InChannels: 32, OutChannels: 32, Input: []int{64, 64}, Kernel: []int{3, 3}}, ConvParams{Stride: []int{9}}},
	} {
		g, err := checkConv("conv", c.d, c.p, false)
		if err != nil {
			t.Fatal(err)
		}
		if convTileBwdInput(g) {
			t.Errorf("%+v %+v: the input gradient on the tiles", c.d, c.p)
		}
		if c.p.Stride == nil && (convTileFwd(g) || convTileBwdWeight(g)) {
			t.Errorf("%+v %+v: the forward or weight gradient on the tiles", c.d, c.p)
		}
	}
}

// TestConvTileConstants: ptx's tile constants, which the launches use, are conv.cu's.
func TestConvTileConstants(t *testing.T) {
	src, err := os.ReadFile("../ptx/conv.cu")
	if err != nil {
		t.Fatal(err)
	}
	def := func(name string) int {
		m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)$`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("conv.cu has no #define %s", name)
		}
		v, _ := strconv.Atoi(string(m[1]))
		return v
	}
	for _, c := range []struct {
		got  int
		want int
		what string
	}{
		{ptx.ConvTileRows, def("CT_X_BM"), "ConvTileRows"},
		{ptx.ConvTileCols, def("CT_X_BN"), "ConvTileCols"},
		{ptx.ConvTileThreads, def("CT_X_BM") / def("CT_X_TM") * (def("CT_X_BN") / def("CT_X_TN")), "ConvTileThreads"},
		{ptx.ConvWeightTileRows, def("CT_W_BM"), "ConvWeightTileRows"},
		{ptx.ConvWeightTileCols, def("CT_W_BN"), "ConvWeightTileCols"},
		{ptx.ConvWeightTileThreads, def("CT_W_BM") / def("CT_W_TM") * (def("CT_W_BN") / def("CT_W_TN")), "ConvWeightTileThreads"},
		{ptx.ConvTileMaxKernel, def("CT_KMAX"), "ConvTileMaxKernel"},
	} {
		if c.got != c.want {
			t.Errorf("ptx.%s = %d, conv.cu says %d", c.what, c.got, c.want)
		}
	}
}
