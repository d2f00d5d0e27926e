package ops

import (
	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The cumulative-sum family (ptx/cumsum.cu; cpu/cumsum.go): one sequential chain of additions
// per row of a row-major (rows, cols) matrix, one GPU thread per row (grid-stride).
var (
	cumsumRowsOp = row(&kernelOp{name: "cumsum_rows", kernel: ptx.CumsumRows, outs: 1, ins: 1,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.CumsumRows(h.b[0], h.b[1], h.s[1], lo, hi) }})
	cumsumRowsBwdOp = row(&kernelOp{name: "cumsum_rows_bwd", kernel: ptx.CumsumRowsBwd, outs: 1, ins: 1,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.CumsumRowsBwd(h.b[0], h.b[1], h.s[1], lo, hi) }})
)

// CumsumRows returns the inclusive prefix sums along each row of the (rows, cols) matrix x
// (torch.cumsum(x, -1)): y[r, j] = x[r, 0] + x[r, 1] + ... + x[r, j], added one float32 addition
// at a time in ascending order (cpu.CumsumRows), so every device gives the same bits. The
// additions of a row form one chain: a long row is a long sequential chain on the GPU too.
func CumsumRows(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("cumsum_rows", "x", x, rows, cols); err != nil {
		return nil, err
	}
	return cumsumRowsOp.call1(rows*cols, []*Buffer{x}, nil, []int{rows, cols})
}

// CumsumRowsBwd returns the gradient of CumsumRows for the cotangent g (rows, cols): the reverse
// inclusive sums along each row, dx[r, j] = g[r, cols-1] + ... + g[r, j], added in descending
// order (cpu.CumsumRowsBwd; PyTorch's flip, cumsum, flip).
func CumsumRowsBwd(g *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("cumsum_rows_bwd", "g", g, rows, cols); err != nil {
		return nil, err
	}
	return cumsumRowsBwdOp.call1(rows*cols, []*Buffer{g}, nil, []int{rows, cols})
}
