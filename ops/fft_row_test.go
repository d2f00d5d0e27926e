package ops

import (
	"bytes"
	bin "encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// withStageKernels runs f with the row kernels turned off (every length on fft_stage and the
// packing passes).
func withStageKernels(f func()) {
	fftRowKernels = false
	defer func() { fftRowKernels = true }()
	f()
}

// TestFFTRowPlan: every complex length up to fftRowMax has at most fftRowStages stages, and the
// plan words of the row kernels decode (as the kernels and the twins read them) to the plan's
// stages, spans and constants for lengths with every radix; Bluestein plans, plans without a
// stage and complex lengths above fftRowMax are refused.
func TestFFTRowPlan(t *testing.T) {
	for c := 1; c <= fftRowMax; c++ {
		if f, ok := cpu.FFTFactors(c); ok && len(f) > fftRowStages {
			t.Fatalf("complex length %d has %d stages > fftRowStages = %d", c, len(f), fftRowStages)
		}
	}
	// c = 1155, 3003, 5005, 6561 (8 stages), 8192 (4^6 * 2), 4096 ...
	for _, n := range []int{3, 12, 143, 1000, 1155, 3003, 5005, 6000, 6561, 8192, 10010, 16384} {
		p, err := cpu.NewRfftPlan(n)
		if err != nil {
			t.Fatal(err)
		}
		radices, rcs, ok := fftRowPlan(p.C)
		if !ok && fftRowWordsFit(p.C) {
			t.Fatalf("n=%d: the row kernels refuse the plan of %d stages", n, len(p.C.Stages))
		}
		if !ok {
			t.Logf("n=%d: the plan words need more than a %d-bit int: per-stage path", n, strconv.IntSize)
			continue
		}
		if got := fftRowSteps(radices, rcs); !slices.Equal(got, p.C.Stages) {
			t.Errorf("n=%d: the plan words decode to %v, want %v", n, got, p.C.Stages)
		}
	}
	for _, n := range []int{1, 2, 97, 194, 16386, 16385} {
		p, err := cpu.NewRfftPlan(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := fftRowPlan(p.C); ok {
			t.Errorf("n=%d: the row kernels take a plan they should refuse (%d stages, Bluestein %t)",
				n, len(p.C.Stages), p.C.Blue != nil)
		}
	}
	for _, c := range []int{1, 8, 9, 800, 8192} {
		if th := fftRowThreads(c); th%32 != 0 || th*fftRowValues < c || th > fftRowMaxThreads {
			t.Errorf("fftRowThreads(%d) = %d", c, th)
		}
	}
}

// fftRowWordsFit reports whether the constants' offsets of plan p fit fftRowPlan's words in an
// int of this platform (always with 64-bit ints: 8 stages of fftRowRcBits = 8 bits).
func fftRowWordsFit(p *cpu.FFTPlan) bool {
	n := 0
	for s, st := range p.Stages {
		if st.Rc != 0 {
			n = fftRowRcBits*s + bits.Len(uint(st.Rc))
		}
	}
	return n < strconv.IntSize
}

// TestFFTRowMatchesStages: on the CPU, the transforms on the row kernels' twins give the bits of
// the per-stage path, for every length up to 80 and longer ones of every radix (batch 3), and
// for batches that the CPU splits into several row ranges.
func TestFFTRowMatchesStages(t *testing.T) {
	d := CPU()
	type tc struct{ n, batch int }
	var cases []tc
	for n := 1; n <= 80; n++ {
		cases = append(cases, tc{n, 3})
	}
	for _, n := range []int{143, 1000, 1155, 1024, 3003, 6561, 8192, 10010, 16384} {
		cases = append(cases, tc{n, 3})
	}
	cases = append(cases, tc{1000, 50}, tc{999, 70}, tc{64, 1100})
	for _, c := range cases {
		n, batch := c.n, c.batch
		x := fftRows(batch, n)
		spec := fftRows(batch, 2*(n/2+1))
		run := func() (y, z []float32) {
			xb, err := FromFloat32(d, x)
			if err != nil {
				t.Fatal(err)
			}
			defer xb.Release()
			sb, err := FromFloat32(d, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Release()
			yb, err := Rfft1dPacked(xb, batch, n)
			if err != nil {
				t.Fatalf("n=%d: %v", n, err)
			}
			defer yb.Release()
			zb, err := Irfft1dPacked(sb, batch, n)
			if err != nil {
				t.Fatalf("n=%d: %v", n, err)
			}
			defer zb.Release()
			y, _ = yb.Float32s()
			z, _ = zb.Float32s()
			return y, z
		}
		y, z := run()
		var ys, zs []float32
		withStageKernels(func() { ys, zs = run() })
		if !sameBits(y, ys) || !sameBits(z, zs) {
			t.Errorf("n=%d batch=%d: the row kernels' twins differ from the per-stage path", n, batch)
		}
	}
}

// fftHostShim makes ptx/fft.cu host C++: CUDA's qualifiers vanish, float2 and dim3 are plain
// structs, and every thread of a block is a fiber (ucontext) whose __syncthreads() returns to the
// scheduler, which resumes the fibers only once all of them wait at the barrier. Between two
// barriers the fibers run one after another, whole, in the order asked (forward, backward or
// shuffled), so that a read of shared memory that a barrier does not separate from another
// thread's write sees a different value depending on the order. A fiber that finishes while others
// wait at a barrier is a divergent barrier (status 1).
const fftHostShim = `
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>
#include <ucontext.h>
struct float2 { float x, y; };
static inline float2 make_float2(float x, float y) { float2 v; v.x = x; v.y = y; return v; }
struct dim3 { unsigned x, y, z; };
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __shared__
#define __launch_bounds__(...)
static dim3 blockIdx, blockDim, gridDim;
struct emu_fiber { ucontext_t ctx; dim3 tid; int state; };  // state: 0 runs, 1 waits, 2 done
static ucontext_t emu_main;
static std::vector<emu_fiber> emu_fibers;
static emu_fiber* emu_cur;
static std::function<void()> emu_body;
static inline dim3& emu_tid() { return emu_cur->tid; }
#define threadIdx (emu_tid())
static void __syncthreads() {
  emu_cur->state = 1;
  swapcontext(&emu_cur->ctx, &emu_main);
}
`

// fftHostMain runs launches read from stdin and writes their outputs to stdout (little-endian):
// per launch the header int32 kernel (0 fft_row, 1 rfft_row, 2 irfft_row; -1 ends), grid, block,
// shared bytes, thread order (0 forward, 1 backward, 2 shuffled), then int64 batch, n, radices,
// rcs, tw and w (float offsets into the table, which is rc), float32 scale, the table and the
// source (int64 length, floats), int64 the destination's length; out: int32 status (0 ok, 1 a
// divergent barrier, 2 a write beyond the shared bytes), the destination. Shared memory and the
// destination start as a NaN that no transform of finite values produces.
const fftHostMain = `
#define EMU_SM (FFT_ROW_MAX + 64)
float2 fft_sm[EMU_SM];
static const uint32_t emu_poison = 0x7fbadbadu;
static void emu_entry() { emu_body(); emu_cur->state = 2; }
static int emu_block(unsigned threads, int order, unsigned seed) {
  static std::vector<char> stacks;
  const size_t stack = 64 << 10;
  if (stacks.size() < threads * stack) stacks.resize(threads * stack);
  emu_fibers.assign(threads, emu_fiber());
  for (unsigned t = 0; t < threads; t++) {
    emu_fiber& f = emu_fibers[t];
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = &stacks[t * stack];
    f.ctx.uc_stack.ss_size = stack;
    f.ctx.uc_link = &emu_main;
    makecontext(&f.ctx, emu_entry, 0);
    f.tid.x = t; f.tid.y = 0; f.tid.z = 0;
    f.state = 0;
  }
  std::vector<unsigned> perm(threads);
  for (unsigned phase = 0;; phase++) {
    for (unsigned t = 0; t < threads; t++) perm[t] = order == 1 ? threads - 1 - t : t;
    if (order == 2) {
      uint64_t s = seed * 0x9e3779b97f4a7c15ull + phase + 1;
      for (unsigned t = threads - 1; t > 0; t--) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        unsigned j = (unsigned)((s >> 33) % (t + 1));
        unsigned v = perm[t]; perm[t] = perm[j]; perm[j] = v;
      }
    }
    for (unsigned i = 0; i < threads; i++) {
      emu_cur = &emu_fibers[perm[i]];
      if (emu_cur->state == 0) swapcontext(&emu_main, &emu_cur->ctx);
    }
    unsigned waiting = 0, done = 0;
    for (auto& f : emu_fibers) { waiting += f.state == 1; done += f.state == 2; }
    if (done == threads) return 0;
    if (done > 0) return 1;
    for (auto& f : emu_fibers) f.state = 0;
  }
}
static bool rd(void* p, size_t n) { return fread(p, 1, n, stdin) == n; }
static std::vector<float> rdvec() {
  int64_t n = 0;
  if (!rd(&n, 8)) exit(3);
  std::vector<float> v(n);
  if (n > 0 && !rd(v.data(), 4 * n)) exit(3);
  return v;
}
int main() {
  for (;;) {
    int32_t h[5];
    if (!rd(h, sizeof h) || h[0] < 0) break;
    int64_t z[6];
    float scale;
    if (!rd(z, sizeof z) || !rd(&scale, 4)) return 3;
    std::vector<float> tab = rdvec(), src = rdvec();
    int64_t ndst;
    if (!rd(&ndst, 8)) return 3;
    float poison;
    memcpy(&poison, &emu_poison, 4);
    std::vector<float> dst(ndst, poison);
    const float* t = tab.data();
    u64 batch = z[0], n = z[1], radices = z[2], rcs = z[3];
    switch (h[0]) {
      case 0: emu_body = [&] { fft_row(dst.data(), src.data(), t + z[4], t, batch, n, radices, rcs); }; break;
      case 1: emu_body = [&] { rfft_row(dst.data(), src.data(), t + z[4], t, t + z[5], batch, n, radices, rcs); }; break;
      case 2: emu_body = [&] { irfft_row(dst.data(), src.data(), t + z[4], t, t + z[5], batch, n, radices, rcs, scale); }; break;
      default: return 4;
    }
    gridDim.x = h[1]; gridDim.y = gridDim.z = 1;
    blockDim.x = h[2]; blockDim.y = blockDim.z = 1;
    int32_t status = 0;
    for (unsigned b = 0; b < (unsigned)h[1] && status == 0; b++) {
      blockIdx.x = b; blockIdx.y = blockIdx.z = 0;
      for (int i = 0; i < EMU_SM; i++) fft_sm[i] = make_float2(poison, poison);
      status = emu_block(h[2], h[4], b);
      for (int i = h[3] / 8; i < EMU_SM && status == 0; i++) {
        if (memcmp(&fft_sm[i].x, &emu_poison, 4) != 0 || memcmp(&fft_sm[i].y, &emu_poison, 4) != 0) status = 2;
      }
    }
    fwrite(&status, 4, 1, stdout);
    fwrite(&ndst, 8, 1, stdout);
    fwrite(dst.data(), 4, ndst, stdout);
  }
  return 0;
}
`

// fftHostLaunch is one launch of a row kernel in the host harness, and the twins' result.
type fftHostLaunch struct {
	name                   string
	kernel, order          int32
	shape                  launchShape
	batch, n, radices, rcs int
	tw, w                  int
	scale                  float32
	table, src             []float32
	dstLen                 int
	want                   []float32
}

func (l *fftHostLaunch) encode(w *bytes.Buffer) {
	put := func(v any) { _ = bin.Write(w, bin.LittleEndian, v) }
	put([]int32{l.kernel, int32(l.shape.grid[0]), int32(l.shape.block[0]), int32(l.shape.shared), l.order})
	put([]int64{int64(l.batch), int64(l.n), int64(l.radices), int64(l.rcs), int64(l.tw), int64(l.w)})
	put(l.scale)
	put(int64(len(l.table)))
	put(l.table)
	put(int64(len(l.src)))
	put(l.src)
	put(int64(l.dstLen))
}

// TestFFTRowHostCXX compiles ptx/fft.cu as host C++ (g++, no contraction: the float operations
// of the kernels are the IEEE single-precision operations nvcc --fmad=false emits) with the fiber
// emulation of fftHostShim, runs rfft_row, irfft_row and fft_row (Bluestein's inner FFTs) with
// the launch ops computes (fftRowGrid: grid, block, shared bytes) and with other geometries (two
// blocks over three rows, blocks of 1024 threads, the threads of each phase run forward,
// backward and shuffled), and requires the bits of the twins (cpu.RfftPlan.Rfft, Irfft and
// cpu.FFTPlan.FFT, the composition of the per-stage twins), with no write beyond the shared
// bytes and no divergent barrier. It skips without g++.
func TestFFTRowHostCXX(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++: ", err)
	}
	cu, err := filepath.Abs("../ptx/fft.cu")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := fftHostShim + fmt.Sprintf("#include %q\n", cu) + fftHostMain
	if err := os.WriteFile(filepath.Join(dir, "fft_host.cc"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "fft_host")
	cmd := exec.Command(gxx, "-std=c++14", "-O1", "-ffp-contract=off", "-fno-fast-math", "-fno-strict-aliasing",
		"-Wno-unknown-pragmas", "-o", exe, filepath.Join(dir, "fft_host.cc"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}

	facts := gpuFacts{arch: 90, sms: 132, sharedOptin: 227 << 10}
	var launches []*fftHostLaunch
	// geometries returns the launches of one transform: ops's shape, then other blocks, grids
	// and thread orders.
	geometries := func(base fftHostLaunch) {
		for i, order := range []int32{0, 1, 2} {
			l := base
			l.order = order
			l.name = fmt.Sprintf("%s order %d", base.name, order)
			switch i {
			case 1:
				l.shape.block[0] = 1024
				l.name += " block 1024"
			case 2:
				if l.batch > 1 {
					l.shape.grid[0] = 2
					l.name += " grid 2"
				}
			}
			launches = append(launches, &l)
		}
	}
	for _, n := range []int{1, 2, 3, 5, 7, 8, 12, 97, 143, 1000, 1024, 4096, 6561, 8192, 10010, 16384} {
		p, err := cpu.NewRfftPlan(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, batch := range []int{1, 3} {
			bins := n/2 + 1
			x := fftRows(batch, n)
			spec := fftRows(batch, 2*bins)
			if bl := p.C.Blue; bl != nil {
				// Bluestein keeps its passes; its inner FFTs of length bl.M run on fft_row.
				radices, rcs, ok := fftRowPlan(bl.Inner)
				if !ok {
					t.Fatalf("n=%d: the row kernels refuse Bluestein's inner FFT of %d", n, bl.M)
				}
				z := fftRows(batch, 2*bl.M)
				sizes := []int{batch, bl.M, radices, rcs}
				geometries(fftHostLaunch{name: fmt.Sprintf("fft_row %dx%d (Bluestein of %d)", batch, bl.M, n),
					kernel: 0, shape: fftRowOp.grid.shape(ptx.FftRow, sizes, facts),
					batch: batch, n: bl.M, radices: radices, rcs: rcs, tw: bl.Inner.Tw, table: p.Table, src: z,
					dstLen: 2 * batch * bl.M, want: bl.Inner.FFT(z, p.Table, batch)})
				continue
			}
			radices, rcs, ok := fftRowPlan(p.C)
			if !ok {
				if n <= 2 {
					continue // no stage: a packing pass alone
				}
				t.Fatalf("n=%d: the row kernels refuse the plan", n)
			}
			sizes := []int{batch, n, radices, rcs}
			geometries(fftHostLaunch{name: fmt.Sprintf("rfft_row %dx%d", batch, n), kernel: 1,
				shape: rfftRowOp.grid.shape(ptx.RfftRow, sizes, facts), batch: batch, n: n, radices: radices, rcs: rcs,
				tw: p.C.Tw, w: p.Post, table: p.Table, src: x, dstLen: 2 * batch * bins, want: p.Rfft(x, batch)})
			geometries(fftHostLaunch{name: fmt.Sprintf("irfft_row %dx%d", batch, n), kernel: 2,
				shape: irfftRowOp.grid.shape(ptx.IrfftRow, sizes, facts), batch: batch, n: n, radices: radices, rcs: rcs,
				tw: p.C.Tw, w: p.Post, scale: p.Scale, table: p.Table, src: spec, dstLen: batch * n, want: p.Irfft(spec, batch)})
		}
	}
	var in bytes.Buffer
	for _, l := range launches {
		l.encode(&in)
	}
	_ = bin.Write(&in, bin.LittleEndian, []int32{-1, 0, 0, 0, 0})
	cmd = exec.Command(exe)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the host harness: %v", err)
	}
	r := bytes.NewReader(out)
	for _, l := range launches {
		var status int32
		var n int64
		if bin.Read(r, bin.LittleEndian, &status) != nil || bin.Read(r, bin.LittleEndian, &n) != nil {
			t.Fatalf("%s: the harness's output ends early", l.name)
		}
		got := make([]float32, n)
		if bin.Read(r, bin.LittleEndian, got) != nil {
			t.Fatalf("%s: the harness's output ends early", l.name)
		}
		switch {
		case status == 1:
			t.Errorf("%s: a divergent barrier", l.name)
		case status == 2:
			t.Errorf("%s: a write beyond the %d bytes of shared memory", l.name, l.shape.shared)
		case status != 0:
			t.Errorf("%s: status %d", l.name, status)
		case !sameBits(got, l.want):
			i := 0
			for i < len(got) && math.Float32bits(got[i]) == math.Float32bits(l.want[i]) {
				i++
			}
			t.Errorf("%s: bits differ from the twins' first at %d of %d: %g, want %g", l.name, i, len(got),
				got[min(i, len(got)-1)], l.want[min(i, len(l.want)-1)])
		}
	}
	t.Logf("%d launches of the row kernels, host C++ against the twins", len(launches))
}
