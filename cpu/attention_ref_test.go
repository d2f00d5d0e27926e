package cpu

import "math"

// The committed twins before the SIMD restructuring, kept verbatim (renamed) as the reference
// that the new code must match bit for bit (TestAttentionMatchesReference).

// attnStatus values.
const (
	attnNormal   = 0
	attnFilled   = 1
	attnExcluded = 2
)

// attnStatus returns status(i, j) of the package comment; mrow is the mask row of i (nil without
// a mask).
func attnStatus(mrow []float32, i, j, flags int) int {
	if flags&AttnCausal != 0 && j > i {
		return attnExcluded
	}
	if flags&(AttnFill|AttnHard) != 0 && mrow[j] == 0 {
		if flags&AttnHard != 0 {
			return attnExcluded
		}
		return attnFilled
	}
	return attnNormal
}

// refAttnDot is dot(a, b) of the package comment over len(a) elements.
func refAttnDot(a, b []float32) float32 {
	b = b[:len(a)]
	var acc float32
	for c, x := range a {
		acc += float32(x * b[c])
	}
	return acc
}

// refAttnDots sets out[jj] = dot(a, rows jj of the rows of stride d in kt) for jj < len(out), the
// chains interleaved (each one's order is dot's).
func refAttnDots(out, a, kt []float32, d int) {
	jj := 0
	for ; jj+4 <= len(out); jj += 4 {
		k0, k1, k2, k3 := kt[jj*d:jj*d+d], kt[(jj+1)*d:(jj+1)*d+d], kt[(jj+2)*d:(jj+2)*d+d], kt[(jj+3)*d:(jj+3)*d+d]
		var s0, s1, s2, s3 float32
		for c, x := range a[:d] {
			s0 += float32(x * k0[c])
			s1 += float32(x * k1[c])
			s2 += float32(x * k2[c])
			s3 += float32(x * k3[c])
		}
		out[jj], out[jj+1], out[jj+2], out[jj+3] = s0, s1, s2, s3
	}
	for ; jj < len(out); jj++ {
		out[jj] = refAttnDot(a[:d], kt[jj*d:])
	}
}

// refAttnMaskRow returns the mask row of (b, i), or nil when flags use no mask.
func refAttnMaskRow(mask []float32, b, i, nq, nk, mstride, flags int) []float32 {
	if flags&(AttnFill|AttnHard) == 0 {
		return nil
	}
	base := b*mstride + i*nk
	return mask[base : base+nk]
}

// refFlashAttentionFwd computes the units [lo, hi) (AttnUnits(bh, nq): tiles of query rows) of the
// forward: O and LSE from Q, K, V and the mask (read only when flags has AttnFill or AttnHard).
// Each query row i keeps m = -Inf, l = 0, o[0..d) = 0 and walks the key blocks [j0, j0+bc),
// bc = AttnKeyBlock(d), in ascending order; a block where every entry of row i is excluded is
// skipped; otherwise, with A the block's entries that are not excluded (ascending j):
//
//	mb = Maxf(...Maxf(Maxf(-Inf, s(i, a0)), s(i, a1))..., s(i, ak))     // j in A
//	mn = Maxf(m, mb);  alpha = Expf(m - mn)
//	p_j = Expf(s(i, j) - mn)                                             // j in A
//	l = (l * alpha) + p_a0 + p_a1 + ...                                 // left to right
//	o[c] = (o[c] * alpha) + p_a0 * V[a0][c] + p_a1 * V[a1][c] + ...      // left to right
//	m = mn
//
// At the end O[i][c] = o[c] / l and LSE[i] = m + Logf(l); a row with no entry outside the
// excluded ones (fully blocked) gets O[i] = 0 and LSE[i] = -Inf.
func refFlashAttentionFwd(o, lse, q, k, v, mask []float32, bh, nq, nk, d, mstride, flags int, scale float32, lo, hi int) {
	bc := AttnKeyBlock(d)
	tiles := (nq + attnRows - 1) / attnRows
	s := make([]float32, bc)
	st := make([]int8, bc)
	acc := make([]float32, d)
	for u := lo; u < hi; u++ {
		b, i0 := u/tiles, (u%tiles)*attnRows
		for i := i0; i < min(i0+attnRows, nq); i++ {
			qi := q[(b*nq+i)*d : (b*nq+i+1)*d]
			mrow := refAttnMaskRow(mask, b, i, nq, nk, mstride, flags)
			m, l, active := float32(math.Inf(-1)), float32(0), false
			clear(acc)
			jend := nk
			if flags&AttnCausal != 0 {
				jend = min(nk, i+1)
			}
			for j0 := 0; j0 < jend; j0 += bc {
				cols := min(bc, nk-j0)
				refAttnDots(s[:cols], qi, k[(b*nk+j0)*d:], d)
				mb, some := float32(math.Inf(-1)), false
				for jj := range cols {
					st[jj] = int8(attnStatus(mrow, i, j0+jj, flags))
					switch st[jj] {
					case attnNormal:
						s[jj] = float32(s[jj] * scale)
					case attnFilled:
						s[jj] = AttnFillScore
					default:
						continue
					}
					mb, some = Maxf(mb, s[jj]), true
				}
				if !some {
					continue
				}
				mn := Maxf(m, mb)
				alpha := Expf(m - mn)
				l = float32(l * alpha)
				for c := range acc {
					acc[c] = float32(acc[c] * alpha)
				}
				for jj := range cols {
					if st[jj] == attnExcluded {
						continue
					}
					p := Expf(s[jj] - mn)
					l += p
					vj := v[(b*nk+j0+jj)*d : (b*nk+j0+jj+1)*d]
					for c, x := range vj {
						acc[c] += float32(p * x)
					}
				}
				m, active = mn, true
			}
			oi := o[(b*nq+i)*d : (b*nq+i+1)*d]
			if !active {
				clear(oi)
				lse[b*nq+i] = float32(math.Inf(-1))
				continue
			}
			for c, x := range acc {
				oi[c] = x / l
			}
			lse[b*nq+i] = m + Logf(l)
		}
	}
}

// refFlashAttentionRowDot computes rows [lo, hi) of the backward's row term D[r] = dot(dO[r], O[r])
// (ascending over the d columns, from +0; dot of refFlashAttentionFwd's comment).
func refFlashAttentionRowDot(dst, dout, o []float32, d, lo, hi int) {
	for r := lo; r < hi; r++ {
		dst[r] = refAttnDot(dout[r*d:(r+1)*d], o[r*d:])
	}
}

// refAttnGrad returns, for the entry (i, j) of status st with sd = dot(Q[i], K[j]) and
// pd = dot(dO[i], V[j]), its probability p = Expf(s(i, j) - lse) (0 when excluded) and its score
// gradient ds = p * (pd - D[i]) (0 unless normal).
func refAttnGrad(st int, sd, pd, lse, dd, scale float32) (p, ds float32) {
	switch st {
	case attnExcluded:
		return 0, 0
	case attnFilled:
		return Expf(AttnFillScore - lse), 0
	}
	p = Expf(float32(sd*scale) - lse)
	return p, float32(p * (pd - dd))
}

// refFlashAttentionBwdKV computes the units [lo, hi) (AttnUnits(bh, nk): tiles of keys) of dK and
// dV from Q, K, V, the mask, dO, LSE and D (refFlashAttentionRowDot). For key j, over the query rows
// i in ascending order, skipping the entries (i, j) that are excluded:
//
//	p = Expf(s(i, j) - LSE[i])
//	dv[c] = dv[c] + p * dO[i][c]                         // from +0, every entry not excluded
//	ds = p * (dot(dO[i], V[j]) - D[i])                   // normal entries only
//	dk[c] = dk[c] + ds * Q[i][c]                         // from +0, normal entries only
//
// and at the end dV[j] = dv, dK[j][c] = dk[c] * scale.
func refFlashAttentionBwdKV(dk, dv, q, k, v, mask, dout, lse, dd []float32, bh, nq, nk, d, mstride, flags int, scale float32, lo, hi int) {
	tiles := (nk + attnRows - 1) / attnRows
	for u := lo; u < hi; u++ {
		b, j0 := u/tiles, (u%tiles)*attnRows
		j1 := min(j0+attnRows, nk)
		dkt := dk[(b*nk+j0)*d : (b*nk+j1)*d]
		dvt := dv[(b*nk+j0)*d : (b*nk+j1)*d]
		clear(dkt)
		clear(dvt)
		istart := 0
		if flags&AttnCausal != 0 {
			istart = j0
		}
		sd, pd := make([]float32, j1-j0), make([]float32, j1-j0)
		for i := istart; i < nq; i++ {
			qi := q[(b*nq+i)*d : (b*nq+i+1)*d]
			doi := dout[(b*nq+i)*d : (b*nq+i+1)*d]
			mrow := refAttnMaskRow(mask, b, i, nq, nk, mstride, flags)
			refAttnDots(sd, qi, k[(b*nk+j0)*d:], d)
			refAttnDots(pd, doi, v[(b*nk+j0)*d:], d)
			for j := j0; j < j1; j++ {
				st := attnStatus(mrow, i, j, flags)
				if st == attnExcluded {
					continue
				}
				p, ds := refAttnGrad(st, sd[j-j0], pd[j-j0], lse[b*nq+i], dd[b*nq+i], scale)
				dvj := dvt[(j-j0)*d : (j-j0+1)*d]
				for c, x := range doi {
					dvj[c] += float32(p * x)
				}
				if st != attnNormal {
					continue
				}
				dkj := dkt[(j-j0)*d : (j-j0+1)*d]
				for c, x := range qi {
					dkj[c] += float32(ds * x)
				}
			}
		}
		for c := range dkt {
			dkt[c] = float32(dkt[c] * scale)
		}
	}
}

// refFlashAttentionBwdQ computes the units [lo, hi) (AttnUnits(bh, nq): tiles of query rows) of dQ.
// For query row i, over the keys j in ascending order, normal entries only (ds as in
// refFlashAttentionBwdKV): dq[c] = dq[c] + ds * K[j][c] from +0; at the end dQ[i][c] = dq[c] * scale.
func refFlashAttentionBwdQ(dq, q, k, v, mask, dout, lse, dd []float32, bh, nq, nk, d, mstride, flags int, scale float32, lo, hi int) {
	tiles := (nq + attnRows - 1) / attnRows
	sd, pd := make([]float32, 64), make([]float32, 64)
	for u := lo; u < hi; u++ {
		b, i0 := u/tiles, (u%tiles)*attnRows
		for i := i0; i < min(i0+attnRows, nq); i++ {
			qi := q[(b*nq+i)*d : (b*nq+i+1)*d]
			doi := dout[(b*nq+i)*d : (b*nq+i+1)*d]
			dqi := dq[(b*nq+i)*d : (b*nq+i+1)*d]
			clear(dqi)
			mrow := refAttnMaskRow(mask, b, i, nq, nk, mstride, flags)
			jend := nk
			if flags&AttnCausal != 0 {
				jend = min(nk, i+1)
			}
			for j0 := 0; j0 < jend; j0 += len(sd) {
				cols := min(len(sd), jend-j0)
				refAttnDots(sd[:cols], qi, k[(b*nk+j0)*d:], d)
				refAttnDots(pd[:cols], doi, v[(b*nk+j0)*d:], d)
				for j := j0; j < j0+cols; j++ {
					if attnStatus(mrow, i, j, flags) != attnNormal {
						continue
					}
					_, ds := refAttnGrad(attnNormal, sd[j-j0], pd[j-j0], lse[b*nq+i], dd[b*nq+i], scale)
					for c, x := range k[(b*nk+j)*d : (b*nk+j+1)*d] {
						dqi[c] += float32(ds * x)
					}
				}
			}
			for c := range dqi {
				dqi[c] = float32(dqi[c] * scale)
			}
		}
	}
}
