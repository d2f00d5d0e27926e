package cpu

// Layer norm kernels: the twins of ptx/norm.cu. Row sums fold as rowStat does (softmax.go).

// LayerNormFwd: the layer norm of rows r in [lo, hi) of the row-major (rows, cols) x, with the
// per-column gamma and beta (the twin of layer_norm_fwd). It writes out and the per-row mean and
// sd, not xhat (LayerNormBwd recomputes it from x, mean and sd). Sums are rowStat's (from -0.0, +):
//
//	m    = float32(rowsum(x) * invCols);  mean[r] = m
//	v    = float32(rowsum(float32((x - m) * (x - m))) * invCols)
//	s    = Sqrtf(v + eps);  sd[r] = s
//	xhat = (x - m) / s;  out = float32(xhat * gamma[c]) + beta[c]
//
// With AVX-512 (layerNormRowsFast, norm_amd64.s) each row is read from memory once and folded,
// centred and mapped in registers; otherwise the sums run on rowFold and rowSubSq and the
// elementwise steps on the fused vector kernels SubSqAdd and NormAffine. Same bits either way.
func LayerNormFwd(out, mean, sd, x, gamma, beta []float32, cols int, invCols, eps float32, lo, hi int) {
	if layerNormRowsFast(out, mean, sd, x, gamma, beta, cols, invCols, eps, lo, hi) {
		return
	}
	var p [rowThreads]float32
	for r := lo; r < hi; r++ {
		xr, o := x[r*cols:(r+1)*cols], out[r*cols:(r+1)*cols]
		m := float32(rowFold(&p, xr, false) * invCols)
		v := float32(rowSubSq(&p, o, xr, m) * invCols) // o = x - m
		s := Sqrtf(v + eps)
		mean[r], sd[r] = m, s
		NormAffine(o, o, gamma[:cols], beta[:cols], s)
	}
}

// SubDiv: dst = float32(x - c) / s (a layer norm row's xhat).
func SubDiv(dst, x []float32, c, s float32) {
	x = x[:len(dst)]
	for i := vecRun(vkSubDiv, dst, nil, x, nil, nil, c, s); i < len(dst); i++ {
		dst[i] = (x[i] - c) / s
	}
}

// MulPair: u = float32(a * b), w = float32(u * c).
func MulPair(u, w, a, b, c []float32) {
	w, a, b, c = w[:len(u)], a[:len(u)], b[:len(u)], c[:len(u)]
	for i := vecRun(vkMulPair, u, w, a, b, c, 0, 0); i < len(u); i++ {
		v := float32(a[i] * b[i])
		u[i], w[i] = v, float32(v*c[i])
	}
}

// ScaleSub: dst = float32(x * c) - d.
func ScaleSub(dst, x []float32, c, d float32) {
	x = x[:len(dst)]
	for i := vecRun(vkScaleSub, dst, nil, x, nil, nil, c, d); i < len(dst); i++ {
		dst[i] = float32(x[i]*c) - d
	}
}

// SubScaledMul: dst = float32(float32(a - float32(b * c)) * d).
func SubScaledMul(dst, a, b []float32, c, d float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := vecRun(vkSubScaledMul, dst, nil, a, b, nil, c, d); i < len(dst); i++ {
		dst[i] = float32((a[i] - float32(b[i]*c)) * d)
	}
}

// AddMul: dst = a + float32(b * c).
func AddMul(dst, a, b, c []float32) {
	a, b, c = a[:len(dst)], b[:len(dst)], c[:len(dst)]
	for i := vecRun(vkAddMul, dst, nil, a, b, c, 0, 0); i < len(dst); i++ {
		dst[i] = a[i] + float32(b[i]*c[i])
	}
}

// SubSqAdd: d = x - c, acc = a + float32(d * d) (a layer norm row's centring and the partials of
// its sum of squares in one pass; acc may be a).
func SubSqAdd(d, acc, x, a []float32, c float32) {
	x, acc, a = x[:len(d)], acc[:len(d)], a[:len(d)]
	for i := vecRun(vkSubSqAdd, d, acc, x, a, nil, c, 0); i < len(d); i++ {
		v := x[i] - c
		d[i], acc[i] = v, a[i]+float32(v*v)
	}
}

// rowSubSq sets d = x - c and returns rowFold of the squares float32(d * d) without storing them:
// SubSqAdd folds each 256-element chunk into the partials p (rowSubSqFast all whole chunks at
// once, where the machine can).
func rowSubSq(p *[rowThreads]float32, d, x []float32, c float32) float32 {
	for t := range p {
		p[t] = negZero
	}
	for base := rowSubSqFast(p, d, x, c); base < len(x); base += rowThreads {
		e := min(len(x), base+rowThreads)
		SubSqAdd(d[base:e], p[:e-base], x[base:e], p[:e-base], c)
	}
	return rowTree(p, false, len(x))
}

// NormAffine: dst = float32(float32(x / s) * gamma) + beta (a layer norm row's xhat and affine
// map in one pass).
func NormAffine(dst, x, gamma, beta []float32, s float32) {
	x, gamma, beta = x[:len(dst)], gamma[:len(dst)], beta[:len(dst)]
	for i := vecRun(vkNormAffine, dst, nil, x, gamma, beta, s, 0); i < len(dst); i++ {
		dst[i] = float32(float32(x[i]/s)*gamma[i]) + beta[i]
	}
}

// LayerNormBwd: the layer norm VJP for the chunks ch in [lo, hi) of ColChunk rows (rows
// [ch*ColChunk, min(rows, (ch+1)*ColChunk))) of the row-major (rows, cols) buffers, from x and the
// forward's per-row mean and sd (the twin of layer_norm_bwd). Per row r, with rowStat's sums
// (from -0.0, +):
//
//	xhat = (x - mean[r]) / sd[r];  invStd = 1 / sd[r]   (LayerNormFwd's xhat, bit for bit)
//	dxh  = float32(dout * gamma[c]);  S1 = rowsum(dxh);  S2 = rowsum(float32(dxh * xhat))
//	dx   = float32(float32(((float32(dxh*colsScale) - S1) - float32(xhat*S2)) * invStd) * invCols)
//
// and the column partials of the chunk, rows in ascending order (ReduceSumColumnChunks' order):
//
//	dgammaPart[ch*cols + c] = ((-0.0 + float32(dout[r0,c]*xhat[r0,c])) + float32(dout[r0+1,c]*xhat[r0+1,c])) + ...
//	dbetaPart[ch*cols + c]  = ((-0.0 + dout[r0,c]) + dout[r0+1,c]) + ...
//
// ReduceSumByColumn over the (chunks, cols) partials then gives the column sums of dout*xhat
// (dgamma) and dout (dbeta) in the order of the two-stage column sum. The elementwise steps run
// on fused vector kernels (SubDiv, MulPair, ScaleSub, SubScaledMul, AddMul; same bits).
func LayerNormBwd(dx, dgammaPart, dbetaPart, dout, x, mean, sd, gamma []float32, rows, cols int,
	colsScale, invCols float32, lo, hi int) {
	var p [rowThreads]float32
	h, u, w := make([]float32, cols), make([]float32, cols), make([]float32, cols)
	gamma = gamma[:cols]
	for ch := lo; ch < hi; ch++ {
		dg, db := dgammaPart[ch*cols:(ch+1)*cols], dbetaPart[ch*cols:(ch+1)*cols]
		for c := range dg {
			dg[c], db[c] = negZero, negZero
		}
		for r := ch * ColChunk; r < min(rows, (ch+1)*ColChunk); r++ {
			o, xr, d := dout[r*cols:(r+1)*cols], x[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
			SubDiv(h, xr, mean[r], sd[r]) // xhat
			MulPair(u, w, o, gamma, h)    // dxh, dxh*xhat
			s1 := rowFold(&p, u, false)
			s2 := rowFold(&p, w, false)
			ScaleSub(d, u, colsScale, s1)
			SubScaledMul(d, d, h, s2, 1/sd[r])
			Scale(d, d, invCols)
			AddMul(dg, dg, o, h)
			Add(db, db, o)
		}
	}
}
