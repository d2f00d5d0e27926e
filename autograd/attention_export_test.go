package autograd

// MultiHeadAttentionComposedForTest exposes multiHeadAttention to the external tests: the flash
// path, or the composed reference (bmm and softmax) when composed.
func MultiHeadAttentionComposedForTest(t *Tape, x, wq, wk, wv, wo Var, heads int, mask []bool, composed bool) Var {
	return t.multiHeadAttention(x, wq, wk, wv, wo, heads, mask, composed)
}
