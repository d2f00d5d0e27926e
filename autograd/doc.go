// Package autograd is the reverse-mode autodiff tape over ops buffers.
//
// A Tape records eagerly evaluated float32 values on one device: each op runs its kernels at
// once and appends a node (its value and shape, its parents, the forward workspace its
// backward pass needs, and its VJP, written next to the forward in the same function). Values
// are shape-erased: a row-major shape and an *ops.Buffer of exactly that many elements. Handles
// (Var) index the nodes in creation order:
//
//	tp := autograd.NewTape(dev)
//	w := tp.Leaf(wBuf, []int{out, in}, true)
//	loss := tp.MSELoss(tp.Tanh(tp.MatMul(w, tp.Const(xBuf, []int{in, 1}))), tp.Const(yBuf, []int{out, 1}))
//	if err := tp.BackwardParams(loss, w); err != nil { ... }
//	g := tp.Grad(w) // owned by the tape until Reset
//	tp.Reset()
//
// # Shapes
//
// Binary elementwise ops (Add, Sub, Mul, Div, Max, Min) broadcast operands of different
// shapes by NumPy's rule, as PyTorch does, recording a BroadcastTo for each operand whose values
// repeat (it materializes them; an operand that only gains axes of size 1 is a view;
// BroadcastAxes maps axes explicitly). Softmax, LogSoftmax, MaskedSoftmax, LayerNorm and
// CrossEntropy work along the last axis with the leading axes folded into rows;
// BatchNormChannelFirst normalizes each channel (dim 0) of one sample, Session.BatchNorm each
// channel (dim 1) of a batch; Concat, Slice, Gather and ScatterAdd work along dim 0, Cat, Stack
// and Narrow (torch.cat, torch.stack, narrow) along any axis; Unsqueeze and Squeeze are views
// that add or drop an axis of size 1 (a reduction's keepdim). MatMul follows torch.matmul
// (vectors, stacks of matrices, broadcast batch axes); Bmm and BmmWithTranspose multiply (batch,
// m, n) by (batch, n, p), the latter reading either operand transposed in place (attention's
// q·kᵀ without a copy); MultiHeadAttention takes a batch of sequences (..., n, dModel).
// Reductions to one value (Sum, Mean, the losses) give shape [] (a scalar). The axis ops
// (ReduceSum, ReduceMean, ReduceMax, Permute, SwapAdjacent, BroadcastTo, BroadcastAxes,
// Session.BatchNorm, and the binary ops and MatMul where they repeat values) take shapes of rank
// at most ops.MaxRank; the others any rank.
//
// # Ownership
//
// Buffers passed in by the caller (leaves, seeds, prepared indices) are borrowed: the tape never
// releases them, and they must stay live until Reset. Op results, retained workspace, uploaded
// indices and gradients belong to the tape: Value and Grad return them for reading, valid until
// Reset (copy one with ops.Copy to keep it). Reshape, Flatten and Detach are views sharing their
// operand's buffer. Reset releases everything the tape owns, so the device's live bytes return
// to what they were before recording.
//
// # Errors
//
// Errors from the caller's input (a shape mismatch, a bad index or label, a released buffer, a
// stale handle) and from the device do not panic: the tape keeps the first one, every later op
// is a no-op returning the invalid zero Var, and Err and the backward methods return it. So a
// forward pass is written without checks and checked once. Reset clears the error.
//
// # Backward passes
//
// One backward pass runs per recording (Reset in between). BackwardWith(y, seed) is the dense
// pass: every node that requires grad (a leaf created with requiresGrad, or a value computed
// from one) gets a gradient, zeros where y does not depend on it; BackwardFrom(ys, seeds) is the
// same from several seeded outputs (the seeds' dense gradient array). Backward(loss) seeds a
// one-element value with 1. BackwardParams(loss, params...) keeps only the gradients of params,
// differentiates only the nodes on a path from one of them, and releases every other gradient
// as soon as its node's VJP consumed it. In all, gradients of values used several times add
// up, and each node's retained workspace is released right after its VJP ran.
//
// # Custom ops
//
// Apply records a Function, an op written by the caller from ops kernels with its own forward
// and backward (PyTorch's torch.autograd.Function): its result, inputs and saved buffers follow
// the same ownership rules as a built-in op's.
//
// # Sessions and optimizers
//
// A Session is the eager training loop of the seeds on top of a Tape: trainable parameters with
// persistent device buffers and explicit host sync (Param), step-scoped inputs, seeded random
// draws, integer inputs for the indexing ops, accumulated parameter gradients, and one sticky
// error for its whole life. SGD, Adam and AdamW (NewSGD, NewAdam, NewAdamW) update the
// parameters in place with one fused kernel launch per parameter tensor; their state moves in and
// out as named buffers (State, LoadState) for checkpoints, as the parameters do (StateDict,
// LoadStateDict). ClipGradNorm and ClipGradValue clip the accumulated gradients between the
// backward pass and Step.
//
// Package nn (autograd/nn) builds PyTorch-shaped modules, initializers, schedulers, a data
// loader and one-file checkpoints on this package's public API: most training code starts there.
//
// A Tape is not safe for concurrent use. Its arithmetic is the ops kernels', so a computation
// gives the same bits on the CPU and on a GPU.
package autograd
