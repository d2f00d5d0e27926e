package ptx

// Attention is the tiled (flash) attention family (attention.cu; cpu/attention.go): 256-thread
// blocks, grid-stride over (sequence, tile) work items, no nq x nk buffer. Parameters: the
// destinations, q, k, v, mask (and for the backward dO, LSE, D), then bh, nq, nk, d, mstride,
// flags and the float scale.
const Attention Module = "attention"

// Attention kernels.
var (
	// O and the row log-sum-exp LSE: online softmax over key blocks of cpu.AttnKeyBlock(d).
	FlashAttentionFwd = newKernel(Attention, "flash_attention_fwd")
	// D = rowsum(dO ∘ O), one thread per row (dd, dout, o, rows, d).
	FlashAttentionRowDot = newKernel(Attention, "flash_attention_rowdot")
	// dK and dV, one owner per key tile.
	FlashAttentionBwdKV = newKernel(Attention, "flash_attention_bwd_kv")
	// dQ, one owner per query tile.
	FlashAttentionBwdQ = newKernel(Attention, "flash_attention_bwd_q")
)
