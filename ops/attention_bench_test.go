package ops

import (
	"fmt"
	"testing"
)

// BenchmarkFlashAttention times FlashAttention (fwd) and forward + FlashAttentionBackward
// (fwdbwd) on the default device at (batch, heads, n, d); the shape is (8, 16, 1024, 64),
// which takes minutes per iteration on two CPU cores, so the CPU runs (1, 4, 1024, 64) unless
// -bench selects the full one by name (e.g. -bench 'FlashAttention/8x16x1024x64'). A GPU also
// runs the two other shapes, (4, 16, 4096, 64) and (8, 8, 1024, 128).
func BenchmarkFlashAttention(b *testing.B) {
	dev := Default()
	shapes := [][4]int{{1, 4, 1024, 64}, {8, 16, 1024, 64}}
	if dev != CPU() {
		shapes = append(shapes, [4]int{4, 16, 4096, 64}, [4]int{8, 8, 1024, 128})
	}
	for _, s := range shapes {
		batch, heads, n, d := s[0], s[1], s[2], s[3]
		for _, causal := range []bool{false, true} {
			name := fmt.Sprintf("%dx%dx%dx%d/causal=%v", batch, heads, n, d, causal)
			bh := batch * heads
			dims := AttentionDims{bh, n, n, d}
			o := AttentionOptions{Causal: causal}
			scale := AttentionScale(d)
			setup := func(b *testing.B) (q, k, v, g *Buffer) {
				mk := func(key int) *Buffer {
					x, err := FromFloat32(dev, attnValues(bh*n*d, key, 2))
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { x.Release() })
					return x
				}
				return mk(1), mk(2), mk(3), mk(4)
			}
			flops := float64(4 * bh * n * n * d) // q·kᵀ and p·v, multiply and add
			b.Run(name+"/fwd", func(b *testing.B) {
				q, k, v, _ := setup(b)
				b.ResetTimer()
				for range b.N {
					out, lse, err := FlashAttention(q, k, v, dims, scale, o)
					if err != nil {
						b.Fatal(err)
					}
					out.Release()
					lse.Release()
				}
				if err := dev.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			b.Run(name+"/fwdbwd", func(b *testing.B) {
				q, k, v, g := setup(b)
				b.ResetTimer()
				for range b.N {
					out, lse, err := FlashAttention(q, k, v, dims, scale, o)
					if err != nil {
						b.Fatal(err)
					}
					dq, dk, dv, err := FlashAttentionBackward(q, k, v, out, lse, g, dims, scale, o)
					if err != nil {
						b.Fatal(err)
					}
					releaseAll([]*Buffer{out, lse, dq, dk, dv})
				}
				if err := dev.Sync(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
