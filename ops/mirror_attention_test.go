package ops

import "fmt"

// attentionCases are the mirror cases of the attention family: FlashAttention (out, lse) and
// FlashAttentionBackward (dq, dk, dv) of 2 sequences at every sequence length of
// {1, 2, 31, 64, 65, 127} (off and on the key blocks of 64, 32 and 16) and head dimension of
// {1, 16, 63, 64, 128, 256} (the three tile classes), unmasked; with the seeds' -1000 fill (a
// per-sequence mask with fully blocked rows), a hard mask (shared, with fully blocked rows),
// causal, causal with a hard mask, d = 32 (a GPU fast path, as 64 and 128), and nq != nk; and 1000 positions (every mask kind at d = 64,
// d = 16 and 256 unmasked), 4096 causal positions (forward only). Inputs are in (-2, 2).
func attentionCases() []mirrorCase {
	var cases []mirrorCase
	add := func(b, nq, nk, d int, kind string, bwd bool) {
		name := fmt.Sprintf("flash_attention/%dx%dx%dx%d/%s", b, nq, nk, d, kind)
		cases = append(cases, mirrorCase{name: name, sizes: []int{b * nq * d},
			run: func(dev *Device, _ []*Buffer, _ int) ([]*Buffer, error) {
				return attentionMirrorRun(dev, AttentionDims{b, nq, nk, d}, kind, bwd)
			}})
	}
	for _, n := range []int{1, 2, 31, 64, 65, 127} {
		for _, d := range []int{1, 16, 63, 64, 128, 256} {
			add(2, n, n, d, "none", true)
		}
	}
	for _, n := range []int{31, 65, 127} {
		for _, d := range []int{16, 64, 128} {
			for _, kind := range []string{"fill", "hard", "causal", "causal+hard"} {
				add(2, n, n, d, kind, true)
			}
		}
	}
	// The GPU's fast path for d = 32 (64 and 128 above).
	for _, n := range []int{31, 65} {
		add(2, n, n, 32, "none", true)
		add(2, n, n, 32, "causal+hard", true)
	}
	add(3, 33, 130, 100, "hard", true)
	add(2, 130, 33, 256, "causal+fill", true)
	for _, kind := range []string{"none", "fill", "hard", "causal"} {
		add(1, 1000, 1000, 64, kind, true)
	}
	add(1, 1000, 1000, 16, "none", true)
	add(1, 1000, 1000, 256, "none", true)
	add(1, 4096, 4096, 16, "causal", false)
	return cases
}

// attentionMirrorRun runs one attention mirror case: kind is none, fill (per-sequence mask,
// rows 0 and nq-1 of sequence 0 fully blocked), hard (shared mask, rows 1 and nq-1 fully
// blocked), causal, causal+hard or causal+fill. It returns out and lse, then dq, dk and dv
// when bwd.
func attentionMirrorRun(dev *Device, dims AttentionDims, kind string, bwd bool) ([]*Buffer, error) {
	b, nq, nk, d := dims.Batch, dims.NQ, dims.NK, dims.D
	var in []*Buffer
	defer func() { releaseAll(in) }()
	up := func(x []float32) (*Buffer, error) {
		buf, err := FromFloat32(dev, x)
		if err == nil {
			in = append(in, buf)
		}
		return buf, err
	}
	q, err := up(attnValues(b*nq*d, 1, 2))
	if err != nil {
		return nil, err
	}
	k, err := up(attnValues(b*nk*d, 2, 2))
	if err != nil {
		return nil, err
	}
	v, err := up(attnValues(b*nk*d, 3, 2))
	if err != nil {
		return nil, err
	}
	o := AttentionOptions{}
	switch kind {
	case "fill", "causal+fill":
		o.Mask, err = up(attnMaskValues(b*nq*nk, nk, 0.7, 0, nq-1))
	case "hard", "causal+hard":
		o.Mask, err = up(attnMaskValues(nq*nk, nk, 0.6, 1, nq-1))
		o.HardMask = true
	}
	if err != nil {
		return nil, err
	}
	o.Causal = kind == "causal" || kind == "causal+hard" || kind == "causal+fill"
	scale := AttentionScale(d)
	out, lse, err := FlashAttention(q, k, v, dims, scale, o)
	if err != nil || !bwd {
		return []*Buffer{out, lse}, err
	}
	g, err := up(attnValues(b*nq*d, 4, 1))
	if err != nil {
		releaseAll([]*Buffer{out, lse})
		return nil, err
	}
	dq, dk, dv, err := FlashAttentionBackward(q, k, v, out, lse, g, dims, scale, o)
	if err != nil {
		releaseAll([]*Buffer{out, lse})
		return nil, err
	}
	return []*Buffer{out, lse, dq, dk, dv}, nil
}
