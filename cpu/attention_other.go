//go:build !amd64 || noasm

package cpu

func attnDots16Fast(out, xt, y []float32, n, d int) bool { return false }

func attnAxpy16Fast(acc, alpha, p []float32, masks []uint16, y []float32, n, d int) bool {
	return false
}
