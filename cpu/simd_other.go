//go:build !amd64 || noasm

package cpu

// No assembly on this platform (or with -tags noasm): the kernels run their pure-Go loops.

func vecRun(k vecKernel, o0, o1, i0, i1, i2 []float32, s0, s1 float32) int { return 0 }
func vecLevels() []string                                                  { return []string{"go"} }
func useVecLevel(name string) string {
	if name != "go" {
		panic("cpu: no kernel set " + name)
	}
	return "go"
}

func transposeBlocks8(dst, x []float32, rows, cols, r0, r1, c0, c1 int) (rEnd, cEnd int) {
	return r0, c0
}

func transposeStrip8(dst []float32, dw int, src []float32, sw, kc8 int) bool { return false }

func rowFoldFast(p *[rowThreads]float32, x []float32, isMax bool) int    { return 0 }
func rowSubSqFast(p *[rowThreads]float32, d, x []float32, c float32) int { return 0 }
