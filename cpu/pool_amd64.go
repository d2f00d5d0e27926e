//go:build amd64 && !noasm

package cpu

// Max and average pooling 2x2 with stride 2 (PyTorch's default pooling) on AVX-512 (16
// windows at a time) or AVX2 (8): the same comparisons and additions in the same order as the
// scalar paths (the bits of the generic path). Used when the kernel set in use is one of them.

// poolVector reports whether the 2x2 stride-2 vector kernels run: the kernel set in use is
// AVX-512's (16 windows per iteration) or AVX2's (8).
func poolVector() bool { return hasAVX512Level() || vecLevel == levelAVX2 }

// max2x2s2Fast writes the n windows of max2x2Run whose first cells are top[2j] (and
// bottom[2j]) and reports whether it did (not without a vector kernel set).
func max2x2s2Fast(out maxOut, top, bottom []float32, n int) bool {
	if !poolVector() || n <= 0 {
		return false
	}
	_, _ = top[2*n-1], bottom[2*n-1]
	var y, idx *float32
	if out.y != nil {
		y = &out.y[:n][0]
	}
	if out.idx != nil {
		idx = &out.idx[:n][0]
	}
	if hasAVX512Level() {
		in0, in1, o := poolTailMasks(n)
		max2x2s2AVX512(y, idx, &top[0], &bottom[0], n, in0, in1, o)
	} else {
		in0, in1, o := poolTailLanes(n)
		max2x2s2AVX2(y, idx, &top[0], &bottom[0], n, in0, in1, o)
	}
	return true
}

// max2x2s2BwdFast writes the two input rows top and bottom (2n cells each) of n disjoint 2x2
// windows (gradients g, argmax offsets at): each cell 0 + g[j] where at[j] is its offset in
// window j, else +0 (maxPoolBwd's values), and reports whether it did.
func max2x2s2BwdFast(top, bottom, g, at []float32, n int) bool {
	if !poolVector() || n <= 0 {
		return false
	}
	_, _, _, _ = top[2*n-1], bottom[2*n-1], g[n-1], at[n-1]
	if hasAVX512Level() {
		in0, in1, o := poolTailMasks(n)
		max2x2s2BwdAVX512(&top[0], &bottom[0], &g[0], &at[0], n, in0, in1, o)
	} else {
		in0, in1, o := poolTailLanes(n)
		max2x2s2BwdAVX2(&top[0], &bottom[0], &g[0], &at[0], n, in0, in1, o)
	}
	return true
}

// avg2x2s2Fast writes y[j] = ((((0 + a) + b) + c) + d) / 4 for the n 2x2 windows whose cells
// are top[2j], top[2j+1], bottom[2j], bottom[2j+1] (avgPool's arithmetic for a window wholly
// inside the input) and reports whether it did.
func avg2x2s2Fast(y, top, bottom []float32, n int) bool {
	if !poolVector() || n <= 0 {
		return false
	}
	_, _, _ = top[2*n-1], bottom[2*n-1], y[n-1]
	if hasAVX512Level() {
		in0, in1, o := poolTailMasks(n)
		avg2x2s2AVX512(&y[0], &top[0], &bottom[0], n, in0, in1, o)
	} else {
		in0, in1, o := poolTailLanes(n)
		avg2x2s2AVX2(&y[0], &top[0], &bottom[0], n, in0, in1, o)
	}
	return true
}

// avg2x2s2BwdFast writes the two input rows top and bottom (2n cells each) of n disjoint 2x2
// windows wholly inside the input: each cell 0 + g[j]/4 (avgPoolBwd's values), and reports
// whether it did.
func avg2x2s2BwdFast(top, bottom, g []float32, n int) bool {
	if !poolVector() || n <= 0 {
		return false
	}
	_, _, _ = top[2*n-1], bottom[2*n-1], g[n-1]
	if hasAVX512Level() {
		in0, in1, o := poolTailMasks(n)
		avg2x2s2BwdAVX512(&top[0], &bottom[0], &g[0], n, in0, in1, o)
	} else {
		in0, in1, o := poolTailLanes(n)
		avg2x2s2BwdAVX2(&top[0], &bottom[0], &g[0], n, in0, in1, o)
	}
	return true
}

// poolTailMasks returns the lane masks of the last n%16 windows (AVX-512): their input cells
// in a row's first and second vector, and their outputs.
func poolTailMasks(n int) (in0, in1, out uint16) {
	r := n % 16
	return uint16(1<<min(2*r, 16) - 1), uint16(1<<max(2*r-16, 0) - 1), uint16(1<<r - 1)
}

// poolTailLanes returns the lane counts of the last n%8 windows (AVX2): their input cells in a
// row's first and second vector, and their outputs.
func poolTailLanes(n int) (in0, in1, out int) {
	r := n % 8
	return min(2*r, 8), max(2*r-8, 0), r
}

//go:noescape
func max2x2s2AVX512(y, idx, top, bottom *float32, n int, in0, in1, out uint16)

//go:noescape
func max2x2s2BwdAVX512(top, bottom, grad, idx *float32, n int, in0, in1, out uint16)

//go:noescape
func avg2x2s2AVX512(y, top, bottom *float32, n int, in0, in1, out uint16)

//go:noescape
func avg2x2s2BwdAVX512(top, bottom, grad *float32, n int, in0, in1, out uint16)

//go:noescape
func max2x2s2AVX2(y, idx, top, bottom *float32, n, in0, in1, out int)

//go:noescape
func max2x2s2BwdAVX2(top, bottom, grad, idx *float32, n, in0, in1, out int)

//go:noescape
func avg2x2s2AVX2(y, top, bottom *float32, n, in0, in1, out int)

//go:noescape
func avg2x2s2BwdAVX2(top, bottom, grad *float32, n, in0, in1, out int)
