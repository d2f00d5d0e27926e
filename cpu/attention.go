package cpu

import "math"

// Tiled (flash) attention: the twins of ptx/attention.cu. Q is (bh, nq, d), K and V are
// (bh, nk, d), row-major, bh the folded batch·heads; the output O is (bh, nq, d) and the row
// log-sum-exp LSE is (bh, nq). No kernel holds an nq x nk matrix: the forward walks the keys in
// blocks of AttnKeyBlock(d) columns with an online softmax, the backward recomputes the
// probabilities block by block from LSE.
//
// Scores. For query row i and key j (all arithmetic float32, one rounding per operation, no fma):
//
//	dot(a, b)  = ((0 + a[0]*b[0]) + a[1]*b[1]) + ... + a[d-1]*b[d-1]   // ascending, from +0
//	status(i, j) = excluded  if flags&AttnCausal != 0 && j > i
//	             = excluded  if flags&AttnHard != 0 && mask[b·mstride + i·nk + j] == 0
//	             = filled    if flags&AttnFill != 0 && mask[b·mstride + i·nk + j] == 0
//	             = normal    otherwise
//	s(i, j)    = AttnFillScore (-1000, unscaled)  if filled
//	           = dot(Q[i], K[j]) * scale          if normal
//
// Excluded entries take no part in anything (no max, no sum, no gradient); filled entries are the
// seeds' -1000.0 convention: they enter the softmax with score -1000 and reach dV, but give no
// score gradient (dQ, dK). mstride is 0 (one (nq, nk) mask shared by every batch) or nq·nk.
const (
	AttnFill   = 1 // the mask's zeros fill the score with AttnFillScore
	AttnHard   = 2 // the mask's zeros exclude the entry
	AttnCausal = 4 // keys j > i are excluded
)

// AttnFillScore is the score of a filled (blocked, seeds' convention) entry.
const AttnFillScore float32 = -1000.0

// AttnMaxD is the largest head dimension of the attention kernels.
const AttnMaxD = 256

// The key blocks of the forward's online softmax (the only tile that shapes the arithmetic):
// AttnBC64 columns for d <= 64, AttnBC128 for d <= 128, AttnBC256 for d <= 256.
const (
	AttnBC64  = 64
	AttnBC128 = 32
	AttnBC256 = 16
)

// AttnKeyBlock returns the forward's key block for head dimension d (ptx/attention.cu: att_bc).
func AttnKeyBlock(d int) int {
	switch {
	case d <= 64:
		return AttnBC64
	case d <= 128:
		return AttnBC128
	}
	return AttnBC256
}

// attnRows is the CPU's tile of query (or key) rows per unit: a launch choice, no bit depends on it.
const attnRows = 16

// AttnUnits returns the units of the CPU twins over n rows of bh sequences (tiles of attnRows rows).
func AttnUnits(bh, n int) int { return bh * ((n + attnRows - 1) / attnRows) }

// attnDot is dot(a, b) of the package comment over len(a) elements.
func attnDot(a, b []float32) float32 {
	b = b[:len(a)]
	var acc float32
	for c, x := range a {
		acc += float32(x * b[c])
	}
	return acc
}

// attnChunk is the backward's number of rows (queries for dK and dV, keys for dQ) whose scores
// one pass computes against a tile: a buffer size, no bit depends on it.
const attnChunk = 64

// The twins run on tiles of attnRows (16) query or key rows held transposed, one row per lane
// (x[c*16 + e] is column c of the tile's row e), so that the vector kernels compute 16 dot
// products or 16 accumulations at once, each lane its own chain in the order of the comments
// (SIMD across rows, never across d): the same operations as one row at a time, the same bits.

// attnPack writes dst[c*16 + e] = src[e*d + c] for e < rows and c < d, and 0 for rows <= e < 16.
func attnPack(dst, src []float32, rows, d int) {
	dst = dst[:d*attnRows]
	if rows < attnRows {
		clear(dst)
	}
	for e := range rows {
		for c, x := range src[e*d : e*d+d] {
			dst[c*attnRows+e] = x
		}
	}
}

// attnDots16 sets out[t*16 + e] = dot(xt lane e, y[t*d : t*d+d]) for t < n: per lane the chain
// ((0 + x[0]*y[0]) + x[1]*y[1]) + ... in ascending c, every product and sum rounded (dot of the
// package comment; x*y == y*x). xt is a packed (d, 16) tile.
func attnDots16(out, xt, y []float32, n, d int) {
	if n == 0 {
		return
	}
	out, xt, y = out[:n*attnRows], xt[:d*attnRows], y[:n*d]
	if d == 0 {
		clear(out)
		return
	}
	if attnDots16Fast(out, xt, y, n, d) {
		return
	}
	for t := range n {
		var acc [attnRows]float32
		for c, x := range y[t*d : t*d+d] {
			xc := xt[c*attnRows : c*attnRows+attnRows]
			for e := range acc {
				acc[e] += float32(xc[e] * x)
			}
		}
		copy(out[t*attnRows:], acc[:])
	}
}

// attnAxpy16 updates the packed (d, 16) accumulators: first acc[c*16 + e] = acc * alpha[e] for
// every c and e (unless alpha is nil), then for t < n ascending and the lanes e of masks[t],
// acc[c*16 + e] = acc + p[t*16 + e] * y[t*d + c], the product and the sum rounded. Lanes outside
// masks[t] are left untouched (not even a +0 added). Multiplying by alpha[e] = 1 leaves every
// value as it is.
func attnAxpy16(acc, alpha, p []float32, masks []uint16, y []float32, n, d int) {
	if d == 0 {
		return
	}
	acc, p, masks, y = acc[:d*attnRows], p[:n*attnRows], masks[:n], y[:n*d]
	if alpha != nil {
		alpha = alpha[:attnRows]
	}
	if attnAxpy16Fast(acc, alpha, p, masks, y, n, d) {
		return
	}
	if alpha != nil {
		for c := range d {
			a := acc[c*attnRows : c*attnRows+attnRows]
			for e := range a {
				a[e] = float32(a[e] * alpha[e])
			}
		}
	}
	for t, mk := range masks {
		if mk == 0 {
			continue
		}
		pt := p[t*attnRows : t*attnRows+attnRows]
		for c, x := range y[t*d : t*d+d] {
			a := acc[c*attnRows : c*attnRows+attnRows]
			for e := range a {
				if mk>>e&1 != 0 {
					a[e] += float32(pt[e] * x)
				}
			}
		}
	}
}

// attnScaleScores sets x[i] = x[i] * scale (rounded), the vector kernel where there is one.
func attnScaleScores(x []float32, scale float32) {
	for i := vecRun(vkScale, x, nil, x, nil, nil, scale, 0); i < len(x); i++ {
		x[i] = float32(x[i] * scale)
	}
}

// attnExp sets x[i] = Expf(x[i]) (the vector kernel, the same bits as Expf).
func attnExp(x []float32) {
	for i := vecRun(vkExp, x, nil, x, nil, nil, 0, 0); i < len(x); i++ {
		x[i] = Expf(x[i])
	}
}

// attnTileMasks sets kept[t] and normal[t] for t < n: bit e (e < lanes) is set in kept when the
// entry (i, j) is not excluded and in normal when it is normal (status of the package comment),
// with (i, j) = (i0 + e, j0 + t) when byQuery (the lanes are query rows) and (i0 + t, j0 + e)
// otherwise (the lanes are keys). Bits from lanes up are clear.
func attnTileMasks(kept, normal []uint16, mask []float32, b, nk, mstride, flags, i0, j0, n, lanes int, byQuery bool) {
	full := uint16(int(1)<<lanes - 1)
	for t := range n {
		km := full
		if flags&AttnCausal != 0 { // excluded when j > i
			if byQuery { // kept when e >= j0 + t - i0
				if sh := j0 + t - i0; sh >= attnRows {
					km = 0
				} else if sh > 0 {
					km &= ^uint16(0) << sh
				}
			} else { // kept when e <= i0 + t - j0
				if sh := i0 + t - j0 + 1; sh <= 0 {
					km = 0
				} else if sh < attnRows {
					km &= uint16(1)<<sh - 1
				}
			}
		}
		nm := km
		if flags&(AttnFill|AttnHard) != 0 {
			for e := range lanes {
				if km>>e&1 == 0 {
					continue
				}
				i, j := i0+e, j0+t
				if !byQuery {
					i, j = i0+t, j0+e
				}
				if mask[b*mstride+i*nk+j] == 0 {
					nm &^= 1 << e
					if flags&AttnHard != 0 {
						km &^= 1 << e
					}
				}
			}
		}
		kept[t], normal[t] = km, nm
	}
}

// FlashAttentionFwd computes the units [lo, hi) (AttnUnits(bh, nq): tiles of query rows) of the
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
func FlashAttentionFwd(o, lse, q, k, v, mask []float32, bh, nq, nk, d, mstride, flags int, scale float32, lo, hi int) {
	bc := AttnKeyBlock(d)
	tiles := (nq + attnRows - 1) / attnRows
	qt := make([]float32, d*attnRows)
	ot := make([]float32, d*attnRows)
	s := make([]float32, bc*attnRows)
	kept, normal := make([]uint16, bc), make([]uint16, bc)
	negInf := float32(math.Inf(-1))
	var m, l, mb, mn, alpha [attnRows]float32
	for u := lo; u < hi; u++ {
		b, i0 := u/tiles, (u%tiles)*attnRows
		rows := min(attnRows, nq-i0)
		attnPack(qt, q[(b*nq+i0)*d:], rows, d)
		clear(ot)
		for r := range m {
			m[r], l[r] = negInf, 0
		}
		var active uint16
		jmax := nk
		if flags&AttnCausal != 0 {
			jmax = min(nk, i0+rows) // the last row's end; later rows' blocks are all excluded
		}
		for j0 := 0; j0 < jmax; j0 += bc {
			cols := min(bc, nk-j0)
			sb := s[:cols*attnRows]
			attnDots16(sb, qt, k[(b*nk+j0)*d:], cols, d)
			attnTileMasks(kept, normal, mask, b, nk, mstride, flags, i0, j0, cols, rows, true)
			attnScaleScores(sb, scale)
			var some uint16
			for r := range mb {
				mb[r] = negInf
			}
			for jj := range cols {
				km, sj := kept[jj], sb[jj*attnRows:jj*attnRows+attnRows]
				some |= km
				if fill := km &^ normal[jj]; fill != 0 {
					for r := range sj {
						if fill>>r&1 != 0 {
							sj[r] = AttnFillScore
						}
					}
				}
				for r, x := range sj {
					if km>>r&1 != 0 {
						mb[r] = Maxf(mb[r], x)
					}
				}
			}
			if some == 0 {
				continue
			}
			for r := range alpha {
				alpha[r], mn[r] = 1, 0
				if some>>r&1 != 0 {
					mn[r] = Maxf(m[r], mb[r])
					alpha[r] = Expf(m[r] - mn[r])
					l[r] = float32(l[r] * alpha[r])
				}
			}
			for jj := range cols {
				sj := sb[jj*attnRows : jj*attnRows+attnRows]
				for r, x := range sj {
					sj[r] = x - mn[r]
				}
			}
			attnExp(sb)
			for jj := range cols {
				km, pj := kept[jj], sb[jj*attnRows:jj*attnRows+attnRows]
				for r, p := range pj {
					if km>>r&1 != 0 {
						l[r] += p
					}
				}
			}
			attnAxpy16(ot, alpha[:], sb, kept, v[(b*nk+j0)*d:], cols, d)
			for r := range m {
				if some>>r&1 != 0 {
					m[r] = mn[r]
				}
			}
			active |= some
		}
		for r := range rows {
			i := b*nq + i0 + r
			oi := o[i*d : (i+1)*d]
			if active>>r&1 == 0 {
				clear(oi)
				lse[i] = negInf
				continue
			}
			for c := range oi {
				oi[c] = ot[c*attnRows+r] / l[r]
			}
			lse[i] = m[r] + Logf(l[r])
		}
	}
}

// FlashAttentionRowDot computes rows [lo, hi) of the backward's row term D[r] = dot(dO[r], O[r])
// (ascending over the d columns, from +0; dot of FlashAttentionFwd's comment).
func FlashAttentionRowDot(dst, dout, o []float32, d, lo, hi int) {
	for r := lo; r < hi; r++ {
		dst[r] = attnDot(dout[r*d:(r+1)*d], o[r*d:])
	}
}

// FlashAttentionBwdKV computes the units [lo, hi) (AttnUnits(bh, nk): tiles of keys) of dK and
// dV from Q, K, V, the mask, dO, LSE and D (FlashAttentionRowDot). For key j, over the query rows
// i in ascending order, skipping the entries (i, j) that are excluded:
//
//	p = Expf(s(i, j) - LSE[i])
//	dv[c] = dv[c] + p * dO[i][c]                         // from +0, every entry not excluded
//	ds = p * (dot(dO[i], V[j]) - D[i])                   // normal entries only
//	dk[c] = dk[c] + ds * Q[i][c]                         // from +0, normal entries only
//
// and at the end dV[j] = dv, dK[j][c] = dk[c] * scale.
func FlashAttentionBwdKV(dk, dv, q, k, v, mask, dout, lse, dd []float32, bh, nq, nk, d, mstride, flags int, scale float32, lo, hi int) {
	tiles := (nk + attnRows - 1) / attnRows
	kt, vt := make([]float32, d*attnRows), make([]float32, d*attnRows)
	dkt, dvt := make([]float32, d*attnRows), make([]float32, d*attnRows)
	sp, pd := make([]float32, attnChunk*attnRows), make([]float32, attnChunk*attnRows)
	kept, normal := make([]uint16, attnChunk), make([]uint16, attnChunk)
	for u := lo; u < hi; u++ {
		b, j0 := u/tiles, (u%tiles)*attnRows
		cols := min(attnRows, nk-j0)
		attnPack(kt, k[(b*nk+j0)*d:], cols, d)
		attnPack(vt, v[(b*nk+j0)*d:], cols, d)
		clear(dkt)
		clear(dvt)
		istart := 0
		if flags&AttnCausal != 0 {
			istart = j0
		}
		for ib := istart; ib < nq; ib += attnChunk {
			n := min(attnChunk, nq-ib)
			sn, pn := sp[:n*attnRows], pd[:n*attnRows]
			qb, ob := q[(b*nq+ib)*d:], dout[(b*nq+ib)*d:]
			attnDots16(sn, kt, qb, n, d)
			attnDots16(pn, vt, ob, n, d)
			attnTileMasks(kept, normal, mask, b, nk, mstride, flags, ib, j0, n, cols, false)
			attnScaleScores(sn, scale)
			for t := range n {
				li := lse[b*nq+ib+t]
				st := sn[t*attnRows : t*attnRows+attnRows]
				fill := kept[t] &^ normal[t]
				for e, x := range st {
					if fill>>e&1 != 0 {
						x = AttnFillScore
					}
					st[e] = x - li
				}
			}
			attnExp(sn) // p
			for t := range n {
				di := dd[b*nq+ib+t]
				st, pt := sn[t*attnRows:t*attnRows+attnRows], pn[t*attnRows:t*attnRows+attnRows]
				for e, p := range st {
					pt[e] = float32(p * (pt[e] - di)) // ds
				}
			}
			attnAxpy16(dvt, nil, sn, kept[:n], ob, n, d)
			attnAxpy16(dkt, nil, pn, normal[:n], qb, n, d)
		}
		for e := range cols {
			j := b*nk + j0 + e
			dkj, dvj := dk[j*d:(j+1)*d], dv[j*d:(j+1)*d]
			for c := range dkj {
				dvj[c] = dvt[c*attnRows+e]
				dkj[c] = float32(dkt[c*attnRows+e] * scale)
			}
		}
	}
}

// FlashAttentionBwdQ computes the units [lo, hi) (AttnUnits(bh, nq): tiles of query rows) of dQ.
// For query row i, over the keys j in ascending order, normal entries only (ds as in
// FlashAttentionBwdKV): dq[c] = dq[c] + ds * K[j][c] from +0; at the end dQ[i][c] = dq[c] * scale.
func FlashAttentionBwdQ(dq, q, k, v, mask, dout, lse, dd []float32, bh, nq, nk, d, mstride, flags int, scale float32, lo, hi int) {
	tiles := (nq + attnRows - 1) / attnRows
	qt, ot, dqt := make([]float32, d*attnRows), make([]float32, d*attnRows), make([]float32, d*attnRows)
	sp, pd := make([]float32, attnChunk*attnRows), make([]float32, attnChunk*attnRows)
	kept, normal := make([]uint16, attnChunk), make([]uint16, attnChunk)
	var li, di [attnRows]float32
	for u := lo; u < hi; u++ {
		b, i0 := u/tiles, (u%tiles)*attnRows
		rows := min(attnRows, nq-i0)
		attnPack(qt, q[(b*nq+i0)*d:], rows, d)
		attnPack(ot, dout[(b*nq+i0)*d:], rows, d)
		clear(dqt)
		li, di = [attnRows]float32{}, [attnRows]float32{}
		copy(li[:], lse[b*nq+i0:b*nq+i0+rows])
		copy(di[:], dd[b*nq+i0:b*nq+i0+rows])
		jend := nk
		if flags&AttnCausal != 0 {
			jend = min(nk, i0+rows)
		}
		for j0 := 0; j0 < jend; j0 += attnChunk {
			n := min(attnChunk, jend-j0)
			sn, pn := sp[:n*attnRows], pd[:n*attnRows]
			kb := k[(b*nk+j0)*d:]
			attnDots16(sn, qt, kb, n, d)
			attnDots16(pn, ot, v[(b*nk+j0)*d:], n, d)
			attnTileMasks(kept, normal, mask, b, nk, mstride, flags, i0, j0, n, rows, true)
			attnScaleScores(sn, scale)
			for t := range n {
				st := sn[t*attnRows : t*attnRows+attnRows]
				for e, x := range st {
					st[e] = x - li[e]
				}
			}
			attnExp(sn)
			for t := range n {
				st, pt := sn[t*attnRows:t*attnRows+attnRows], pn[t*attnRows:t*attnRows+attnRows]
				for e, p := range st {
					pt[e] = float32(p * (pt[e] - di[e]))
				}
			}
			attnAxpy16(dqt, nil, pn, normal[:n], kb, n, d)
		}
		for r := range rows {
			i := b*nq + i0 + r
			dqi := dq[i*d : (i+1)*d]
			for c := range dqi {
				dqi[c] = float32(dqt[c*attnRows+r] * scale)
			}
		}
	}
}
