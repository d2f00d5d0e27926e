package ptx

// Conv is the N-D convolution family (conv.cu; cpu/conv.go): spatial rank 1..8 right-aligned in
// a geometry array of 48 uint32 (input, output, kernel, stride, padding, dilation sizes, 8 each),
// batched channel-first operands, groups; direct kernels, one owner per output, grid-stride.
// Parameters (destination, inputs, geometry, batch, cin, cout, groups, inProd, outProd, kProd
// [, hasBias]); conv_bwd_bias takes (dB, dY, batch, cout, outProd).
const Conv Module = "conv"

// Convolution kernels: the forward, the input gradient (also the transposed convolution's
// forward), the weight gradient and the bias gradient.
var (
	ConvFwd       = newKernel(Conv, "conv_fwd")
	ConvBwdInput  = newKernel(Conv, "conv_bwd_input")
	ConvBwdWeight = newKernel(Conv, "conv_bwd_weight")
	ConvBwdBias   = newKernel(Conv, "conv_bwd_bias")
)
