package ops

import (
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// Tiled (flash) attention (ptx/attention.cu; cpu/attention.go, whose doc comments state the
// arithmetic): softmax(Q·Kᵀ·scale, masked)·V per sequence of a folded batch, without any nq x nk
// buffer on either backend. The forward's online softmax walks the keys in blocks of
// cpu.AttnKeyBlock(d) columns (a function of d only), so CPU and GPU give the same bits; the
// backward recomputes the probabilities from the saved row log-sum-exp, with one owner per
// output (no atomics).
var (
	flashFwdOp = row(&kernelOp{name: "flash_attention_fwd", kernel: ptx.FlashAttentionFwd, outs: 2, ins: 4,
		grid: attnGrid{n: 1, tile: attnFwdRows}, units: func(s []int) int { return cpu.AttnUnits(s[0], s[1]) },
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.FlashAttentionFwd(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.b[5], h.s[0], h.s[1], h.s[2], h.s[3], h.s[4], h.s[5], h.f[0], lo, hi)
		}})
	flashRowDotOp = row(&kernelOp{name: "flash_attention_rowdot", kernel: ptx.FlashAttentionRowDot, outs: 1, ins: 2,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.FlashAttentionRowDot(h.b[0], h.b[1], h.b[2], h.s[1], lo, hi) }})
	flashBwdKVOp = row(&kernelOp{name: "flash_attention_bwd_kv", kernel: ptx.FlashAttentionBwdKV, outs: 2, ins: 7,
		grid: attnGrid{n: 2, tile: attnBwdTile}, units: func(s []int) int { return cpu.AttnUnits(s[0], s[2]) },
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.FlashAttentionBwdKV(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.b[5], h.b[6], h.b[7], h.b[8],
				h.s[0], h.s[1], h.s[2], h.s[3], h.s[4], h.s[5], h.f[0], lo, hi)
		}})
	flashBwdQOp = row(&kernelOp{name: "flash_attention_bwd_q", kernel: ptx.FlashAttentionBwdQ, outs: 1, ins: 7,
		grid: attnGrid{n: 1, tile: attnBwdTile}, units: func(s []int) int { return cpu.AttnUnits(s[0], s[1]) },
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.FlashAttentionBwdQ(h.b[0], h.b[1], h.b[2], h.b[3], h.b[4], h.b[5], h.b[6], h.b[7],
				h.s[0], h.s[1], h.s[2], h.s[3], h.s[4], h.s[5], h.f[0], lo, hi)
		}})
)

// The launch tiles of ptx/attention.cu (launch only; TestAttentionSharedConstants reads them):
// the forward's query rows per block (ATT_FWD_BR_*) and the backward's rows and keys (ATT_BWD_T_*)
// for d <= 64, <= 128 and <= 256.
var (
	attnFwdRowsTable = [3]int{32, 32, 16}
	attnBwdTileTable = [3]int{32, 16, 8}
)

func attnClass(d int) int {
	switch {
	case d <= 64:
		return 0
	case d <= 128:
		return 1
	}
	return 2
}

func attnFwdRows(d int) int { return attnFwdRowsTable[attnClass(d)] }
func attnBwdTile(d int) int { return attnBwdTileTable[attnClass(d)] }

// attnGrid: 256-thread blocks, one per (sequence, tile) work item of sizes (bh, nq, nk, d, ...):
// tiles of tile(d) rows of s[n] (grid-stride beyond maxBlocks).
type attnGrid struct {
	n    int
	tile func(d int) int
}

func (g attnGrid) shape(k *ptx.Kernel, s []int, d gpuFacts) launchShape {
	t := g.tile(s[3])
	work := uint64(s[0]) * uint64((s[g.n]+t-1)/t)
	return launchShape{kernel: k, grid: [3]uint32{uint32(max(1, min(work, d.maxBlocks()))), 1, 1},
		block: [3]uint32{256, 1, 1}}
}

// AttentionDims are the sizes of an attention problem: Batch sequences (batch·heads folded),
// NQ queries and NK keys per sequence, head dimension D (1 to AttentionMaxD). Q is (Batch, NQ, D),
// K and V (Batch, NK, D), the output (Batch, NQ, D), row-major.
type AttentionDims struct{ Batch, NQ, NK, D int }

// AttentionMaxD is the largest head dimension of the attention kernels.
const AttentionMaxD = cpu.AttnMaxD

// AttentionFill is the score the seeds' attention gives a blocked entry (unscaled).
const AttentionFill = cpu.AttnFillScore

// AttentionOptions are the masks of an attention call; the zero value attends everywhere.
//
// Mask, when not nil, holds NQ·NK values shared by every sequence, or Batch·NQ·NK (one (NQ, NK)
// mask per sequence); a nonzero value allows the entry (query i, key j). By default a blocked
// entry follows the seeds' convention: its score is AttentionFill (-1000.0) and it still enters
// the softmax (a fully blocked row then averages V), it reaches dV but gives no gradient to Q or
// K. With HardMask, a blocked entry is excluded: no weight, no gradient, and a fully blocked row
// outputs zeros with zero gradients (TorchLean's current convention; PyTorch's boolean attn_mask
// except that PyTorch gives NaN for a fully blocked row). Causal excludes the keys j > i (PyTorch's
// is_causal: the top-left lower triangle), with or without a mask.
type AttentionOptions struct {
	Mask     *Buffer
	HardMask bool
	Causal   bool
}

// attnPlan is a checked attention call: its kernel sizes and its mask buffer (q when none).
type attnPlan struct {
	sizes []int
	mask  *Buffer
}

// plan checks the operands of op and returns the kernels' sizes.
func (o AttentionOptions) plan(op string, dims AttentionDims, q, k, v *Buffer) (attnPlan, error) {
	b, nq, nk, d := dims.Batch, dims.NQ, dims.NK, dims.D
	if b < 0 || nq < 0 || nk < 0 {
		return attnPlan{}, fmt.Errorf("ops: %s: negative sizes %+v", op, dims)
	}
	if d < 1 || d > AttentionMaxD {
		return attnPlan{}, fmt.Errorf("ops: %s: head dimension %d outside [1, %d]", op, d, AttentionMaxD)
	}
	nqd, ok1 := mulFits(b, nq, d)
	nkd, ok2 := mulFits(b, nk, d)
	mn, ok3 := mulFits(nq, nk)
	bmn, ok4 := mulFits(b, nq, nk)
	if !ok1 || !ok2 || !ok3 || (!ok4 && o.Mask != nil) {
		return attnPlan{}, fmt.Errorf("ops: %s: sizes %+v overflow", op, dims)
	}
	for _, x := range []struct {
		name string
		b    *Buffer
		n    int
	}{{"q", q, nqd}, {"k", k, nkd}, {"v", v, nkd}} {
		if x.b == nil {
			return attnPlan{}, fmt.Errorf("ops: %s: %s is nil", op, x.name)
		}
		if err := checkLen(op, x.b, x.n, x.name); err != nil {
			return attnPlan{}, err
		}
	}
	flags, mstride, mask := 0, 0, q
	if o.Causal {
		flags |= cpu.AttnCausal
	}
	if o.Mask != nil {
		if err := o.Mask.liveIn(op); err != nil {
			return attnPlan{}, err
		}
		switch o.Mask.Len() {
		case mn:
		case bmn:
			mstride = mn
		default:
			return attnPlan{}, fmt.Errorf("ops: %s: mask has %d elements, want %d (shared) or %d (per sequence)", op, o.Mask.Len(), mn, bmn)
		}
		mask = o.Mask
		if o.HardMask {
			flags |= cpu.AttnHard
		} else {
			flags |= cpu.AttnFill
		}
	} else if o.HardMask {
		return attnPlan{}, fmt.Errorf("ops: %s: HardMask without a mask", op)
	}
	return attnPlan{sizes: []int{b, nq, nk, d, mstride, flags}, mask: mask}, nil
}

// AttentionScale returns PyTorch's default scale 1/sqrt(d) (1 for d = 0), the scale of the
// seeds' multi-head attention.
func AttentionScale(d int) float64 {
	if d == 0 {
		return 1
	}
	return 1 / math.Sqrt(float64(d))
}

// FlashAttention returns softmax(Q·Kᵀ·scale, masked by o)·V for every sequence (out, (Batch, NQ,
// D)) and the row log-sum-exp of the scaled scores (lse, (Batch, NQ); -Inf for a fully blocked
// row), which FlashAttentionBackward reads. scale is rounded to float32. The arithmetic is
// cpu.FlashAttentionFwd's: the same bits on every device. Memory beyond the outputs: none.
func FlashAttention(q, k, v *Buffer, dims AttentionDims, scale float64, o AttentionOptions) (out, lse *Buffer, err error) {
	const op = "flash_attention_fwd"
	p, err := o.plan(op, dims, q, k, v)
	if err != nil {
		return nil, nil, err
	}
	outs, err := flashFwdOp.call([]int{dims.Batch * dims.NQ * dims.D, dims.Batch * dims.NQ}, []*Buffer{q, k, v, p.mask}, nil, p.sizes, float32(scale))
	if err != nil {
		return nil, nil, err
	}
	return outs[0], outs[1], nil
}

// FlashAttentionBackward returns the gradients of FlashAttention's output for the cotangent dOut
// (Batch, NQ, D), from the forward's inputs (with the same dims, scale and options) and its
// outputs out and lse: dQ, dK and dV, in three passes with one owner per output (D = rowsum(dOut
// ∘ out), then dK and dV per key tile, then dQ per query tile; cpu.FlashAttentionBwdKV and
// FlashAttentionBwdQ state the arithmetic). Memory beyond the outputs: Batch·NQ floats.
func FlashAttentionBackward(q, k, v, out, lse, dOut *Buffer, dims AttentionDims, scale float64, o AttentionOptions) (dq, dk, dv *Buffer, err error) {
	const op = "flash_attention_bwd"
	p, err := o.plan(op, dims, q, k, v)
	if err != nil {
		return nil, nil, nil, err
	}
	rows, nqd := dims.Batch*dims.NQ, dims.Batch*dims.NQ*dims.D
	for _, x := range []struct {
		name string
		b    *Buffer
		n    int
	}{{"out", out, nqd}, {"lse", lse, rows}, {"dOut", dOut, nqd}} {
		if x.b == nil {
			return nil, nil, nil, fmt.Errorf("ops: %s: %s is nil", op, x.name)
		}
		if err := checkLen(op, x.b, x.n, x.name); err != nil {
			return nil, nil, nil, err
		}
	}
	dd, err := flashRowDotOp.call1(rows, []*Buffer{dOut, out}, nil, []int{rows, dims.D})
	if err != nil {
		return nil, nil, nil, err
	}
	defer dd.Release()
	ins := []*Buffer{q, k, v, p.mask, dOut, lse, dd}
	kv, err := flashBwdKVOp.call([]int{dims.Batch * dims.NK * dims.D, dims.Batch * dims.NK * dims.D}, ins, nil, p.sizes, float32(scale))
	if err != nil {
		return nil, nil, nil, err
	}
	dq, err = flashBwdQOp.call1(nqd, ins, nil, p.sizes, float32(scale))
	if err != nil {
		releaseAll(kv)
		return nil, nil, nil, err
	}
	return dq, kv[0], kv[1], nil
}

// seedAttention is the seeds' form: (batch, n, d) operands, the (batch, n, n) mask read when
// hasMask, blocked entries filled with -1000.0.
func seedAttention(op string, mask *Buffer, hasMask bool, batch, n, d int) (AttentionDims, AttentionOptions, error) {
	o := AttentionOptions{}
	if hasMask {
		if mask == nil {
			return AttentionDims{}, o, fmt.Errorf("ops: %s: hasMask with a nil mask", op)
		}
		o.Mask = mask
	}
	return AttentionDims{Batch: batch, NQ: n, NK: n, D: d}, o, nil
}

// FlashAttentionFwd is the seeds' flash_attention_fwd: softmax((Q·Kᵀ)·scale + fill)·V for Q, K,
// V of (batch, n, d) (batch usually the folded batch·heads), where, when hasMask, the mask
// (batch·n·n values, or n·n shared by every sequence; 0 blocks) fills blocked scores with
// AttentionFill; the mask is not read otherwise. FlashAttention with the fill convention.
func FlashAttentionFwd(q, k, v, mask *Buffer, hasMask bool, batch, n, d int, scale float64) (*Buffer, error) {
	dims, o, err := seedAttention("flash_attention_fwd", mask, hasMask, batch, n, d)
	if err != nil {
		return nil, err
	}
	out, lse, err := FlashAttention(q, k, v, dims, scale, o)
	if err != nil {
		return nil, err
	}
	lse.Release()
	return out, nil
}

// seedAttentionBwd runs the forward and the backward of the seeds' form and returns dQ, dK and
// dV.
func seedAttentionBwd(q, k, v, mask, dOut *Buffer, hasMask bool, batch, n, d int, scale float64) (dq, dk, dv *Buffer, err error) {
	dims, o, err := seedAttention("flash_attention_bwd", mask, hasMask, batch, n, d)
	if err != nil {
		return nil, nil, nil, err
	}
	out, lse, err := FlashAttention(q, k, v, dims, scale, o)
	if err != nil {
		return nil, nil, nil, err
	}
	defer out.Release()
	defer lse.Release()
	return FlashAttentionBackward(q, k, v, out, lse, dOut, dims, scale, o)
}

// FlashAttentionBwd is the fused VJP of FlashAttentionFwd for the cotangent dOut: dQ, dK and dV
// in one call (it recomputes the forward; FlashAttentionBackward reuses a saved one).
func FlashAttentionBwd(q, k, v, mask, dOut *Buffer, hasMask bool, batch, n, d int, scale float64) (dq, dk, dv *Buffer, err error) {
	return seedAttentionBwd(q, k, v, mask, dOut, hasMask, batch, n, d, scale)
}

// FlashAttentionBwdQ is the seeds' flash_attention_bwd_q: dQ of FlashAttentionFwd for dOut.
func FlashAttentionBwdQ(q, k, v, mask, dOut *Buffer, hasMask bool, batch, n, d int, scale float64) (*Buffer, error) {
	dq, dk, dv, err := seedAttentionBwd(q, k, v, mask, dOut, hasMask, batch, n, d, scale)
	if err != nil {
		return nil, err
	}
	return ReleaseThen(dq, dk, dv), nil
}

// FlashAttentionBwdK is the seeds' flash_attention_bwd_k: dK of FlashAttentionFwd for dOut.
func FlashAttentionBwdK(q, k, v, mask, dOut *Buffer, hasMask bool, batch, n, d int, scale float64) (*Buffer, error) {
	dq, dk, dv, err := seedAttentionBwd(q, k, v, mask, dOut, hasMask, batch, n, d, scale)
	if err != nil {
		return nil, err
	}
	return ReleaseThen(dk, dq, dv), nil
}

// FlashAttentionBwdV is the seeds' flash_attention_bwd_v: dV of FlashAttentionFwd for dOut.
func FlashAttentionBwdV(q, k, v, mask, dOut *Buffer, hasMask bool, batch, n, d int, scale float64) (*Buffer, error) {
	dq, dk, dv, err := seedAttentionBwd(q, k, v, mask, dOut, hasMask, batch, n, d, scale)
	if err != nil {
		return nil, err
	}
	return ReleaseThen(dv, dq, dk), nil
}
