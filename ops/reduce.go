package ops

import (
	"math"

	"github.com/torchlean-go/torchlean/cpu"
)

// Sum returns the sum of all elements as a length-1 buffer; 0 for an empty buffer. The order of
// additions depends on the length only (cpu.SumChunks, pass after pass), so every device gives the
// same bits, in either mode.
func Sum(x *Buffer) (*Buffer, error) { return reduceAll("sum", x, false) }

// Mean returns sum(x) / float32(n) as a length-1 buffer; NaN for an empty buffer.
func Mean(x *Buffer) (*Buffer, error) { return reduceAll("mean", x, true) }

func reduceAll(name string, x *Buffer, mean bool) (*Buffer, error) {
	if err := x.useIn(name); err != nil {
		return nil, err
	}
	defer x.done()
	d, n := x.dev, x.n
	if n == 0 {
		v := 0.0
		if mean {
			v = math.NaN()
		}
		return Full(d, 1, v)
	}
	divisor := float32(1)
	if mean {
		divisor = float32(n)
	}
	cur := x
	for {
		parts := (n + cpu.SumChunkLen - 1) / cpu.SumChunkLen
		out, err := newBuffer(d, parts)
		if err != nil {
			if cur != x {
				cur.Release()
			}
			return nil, opErr(name, err)
		}
		div := float32(1)
		if parts == 1 {
			div = divisor
		}
		err = d.be.sumChunks(out.mem, cur.mem, n, div)
		if cur != x {
			cur.Release()
		}
		if err != nil {
			out.Release()
			return nil, opErr(name, err)
		}
		if parts == 1 {
			return out, nil
		}
		cur, n = out, parts
	}
}
