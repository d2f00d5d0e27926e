//go:build amd64 && !noasm

package cpu

import "github.com/klauspost/cpuid/v2"

// The whole chunks of SumChunks run in assembly (reduce_amd64.s) when cpuid reports AVX-512F or
// AVX2: the same additions in the same order as the Go loop, so the same bits.
const (
	sumGo = iota
	sumAVX2
	sumAVX512
)

var sumLevelNames = [...]string{sumGo: "go", sumAVX2: "avx2", sumAVX512: "avx512"}

// sumHave lists the sum kernels this CPU runs, best first; sumLevel is the one in use.
var (
	sumHave  = haveSumLevels()
	sumLevel = sumHave[0]
)

func haveSumLevels() []int {
	var l []int
	if cpuid.CPU.Supports(cpuid.AVX512F) {
		l = append(l, sumAVX512)
	}
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2) {
		l = append(l, sumAVX2)
	}
	return append(l, sumGo)
}

// sumChunksFast writes out[c] for the leading chunks of x that are whole (at most len(out)) with
// the kernel in use and returns how many it wrote (0 with the Go loop).
func sumChunksFast(out, x []float32, divisor float32) int {
	n := min(len(out), len(x)/SumChunkLen)
	if n == 0 {
		return 0
	}
	_ = x[n*SumChunkLen-1]
	switch sumLevel {
	case sumAVX512:
		sumChunksAVX512(&out[0], &x[0], n, divisor)
	case sumAVX2:
		var p [sumThreads]float32
		sumChunksAVX2(&out[0], &x[0], n, divisor, &p)
	default:
		return 0
	}
	return n
}

// sumLevels names the sum kernels this machine can run, best first, "go" last.
func sumLevels() []string {
	var names []string
	for _, l := range sumHave {
		names = append(names, sumLevelNames[l])
	}
	return names
}

// useSumLevel makes SumChunks use the named kernel (one of sumLevels) and returns the previous name.
func useSumLevel(name string) string {
	prev := sumLevelNames[sumLevel]
	for _, l := range sumHave {
		if sumLevelNames[l] == name {
			sumLevel = l
			return prev
		}
	}
	panic("cpu: no sum kernel " + name)
}

//go:noescape
func sumChunksAVX512(out, x *float32, chunks int, divisor float32)

//go:noescape
func sumChunksAVX2(out, x *float32, chunks int, divisor float32, p *[sumThreads]float32)
