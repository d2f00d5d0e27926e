package ops

import (
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// bmmOps are the batched matrix products (ptx/matmul.cu and ptx/matmul_tiny.cu, cpu.Bmm), indexed by
// 2*transA + transB. Sizes are (batch, m, n, p); ptx.MatmulLaunch picks the kernel and shape.
var bmmOps = [4]*kernelOp{bmmOp(false, false), bmmOp(false, true), bmmOp(true, false), bmmOp(true, true)}

func bmmOp(transA, transB bool) *kernelOp {
	return row(&kernelOp{name: "bmm", outs: 1, ins: 2,
		grid: pickedGrid(func(s []int, _ gpuFacts) launchShape {
			k, grid, block := ptx.MatmulLaunch(s[0], s[1], s[2], s[3], transA, transB)
			return launchShape{kernel: k, grid: grid, block: block}
		}),
		units: oneUnit, whole: true,
		cpu: func(h *hostArgs, _, _ int) {
			cpu.Bmm(h.b[0], h.b[1], h.b[2], h.s[0], h.s[1], h.s[2], h.s[3], transA, transB)
		}})
}

// Bmm returns the batched product C_t = A_t · B_t, t < batch, of row-major matrices: a holds
// batch matrices of shape (m, n), b batch matrices of shape (n, p), the result batch matrices of
// shape (m, p).
//
// Every element is one owner's fma chain over k ascending from +0,
//
//	acc = fma(A_t[i][k], B_t[k][j], acc),  k = 0 .. n-1,
//
// each fma rounded once (no TF32, no split-K): the bits depend only on the inputs, on either
// backend, whatever the shape or the kernel chosen. n == 0 gives zeros.
func Bmm(a, b *Buffer, batch, m, n, p int) (*Buffer, error) {
	return BmmWithTranspose(a, b, batch, m, n, p, false, false)
}

// Matmul returns the (m, p) product of the row-major (m, n) matrix a and (n, p) matrix b: Bmm
// with a batch of one.
func Matmul(a, b *Buffer, m, n, p int) (*Buffer, error) {
	return bmm("matmul", a, b, 1, m, n, p, false, false)
}

// BmmWithTranspose is Bmm with either operand read transposed, so that backward passes never
// materialize a transpose: with transA, a holds each A_t stored as its (n, m) transpose, and
// with transB, b holds each B_t stored as its (p, n) transpose. The product is the same logical
// (m, n) x (n, p) one, with the arithmetic of Bmm; the lengths are batch*m*n and batch*n*p
// either way. The gradients of C = A·B are dA = BmmWithTranspose(dC, B, ..., m, p, n, false,
// true) and dB = BmmWithTranspose(A, dC, ..., n, m, p, true, false).
func BmmWithTranspose(a, b *Buffer, batch, m, n, p int, transA, transB bool) (*Buffer, error) {
	return bmm("bmm", a, b, batch, m, n, p, transA, transB)
}

// bmm is BmmWithTranspose, its errors naming the public op.
func bmm(op string, a, b *Buffer, batch, m, n, p int, transA, transB bool) (*Buffer, error) {
	if batch < 0 || m < 0 || n < 0 || p < 0 {
		return nil, fmt.Errorf("ops: %s: negative size (batch %d, m %d, n %d, p %d)", op, batch, m, n, p)
	}
	lenA, okA := mulFits(batch, m, n)
	lenB, okB := mulFits(batch, n, p)
	lenC, okC := mulFits(batch, m, p)
	if !okA || !okB || !okC {
		return nil, fmt.Errorf("ops: %s: sizes (batch %d, m %d, n %d, p %d) overflow", op, batch, m, n, p)
	}
	if err := checkLen(op, a, lenA, "A"); err != nil {
		return nil, err
	}
	if err := checkLen(op, b, lenB, "B"); err != nil {
		return nil, err
	}
	if err := sameDevice(op, []*Buffer{a, b}); err != nil {
		return nil, err
	}
	if n == 0 || lenC == 0 {
		return full(op, a.dev, lenC, 0)
	}
	k := 0
	if transA {
		k += 2
	}
	if transB {
		k++
	}
	c, err := bmmOps[k].call1(lenC, []*Buffer{a, b}, nil, []int{batch, m, n, p})
	return c, asOp(op, err)
}

// mulLimit bounds the products mulFits accepts: 2^62, or 2^31 - 1 where int has 32 bits.
const mulLimit = min(1<<62, math.MaxInt)

// mulFits returns the product of the non-negative xs and whether it is below mulLimit, so that
// element counts stay ints on 32-bit platforms too (byte counts are bounded where buffers are
// allocated: maxBufferLen).
func mulFits(xs ...int) (int, bool) {
	p := uint64(1)
	for _, x := range xs {
		if x == 0 {
			return 0, true
		}
	}
	for _, x := range xs {
		if uint64(x) > math.MaxUint64/p || p*uint64(x) >= mulLimit {
			return 0, false
		}
		p *= uint64(x)
	}
	return int(p), true
}
