//go:build !amd64 || noasm

package cpu

// No assembly on this platform (or with -tags noasm): SumChunks runs its Go loop.

func sumChunksFast(out, x []float32, divisor float32) int { return 0 }
func sumLevels() []string                                 { return []string{"go"} }
func useSumLevel(name string) string {
	if name != "go" {
		panic("cpu: no sum kernel " + name)
	}
	return "go"
}
