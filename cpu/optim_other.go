//go:build !amd64 || noasm

package cpu

// adamFast does nothing here: AdamStep runs its Go loop.
func adamFast(param, m, v, grad []float32, s *[9]float32) int { return 0 }
