package ptx

// Conv is the N-D convolution family (conv.cu; cpu/conv.go): spatial rank 1..8 right-aligned in
// a geometry array of 48 uint32 (input, output, kernel, stride, padding, dilation sizes, 8 each),
// batched channel-first operands, groups; direct kernels, one owner per output, grid-stride,
// and tiled implicit GEMMs with the same arithmetic.
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

// The tiled implicit-GEMM forms of ConvFwd, ConvBwdInput and ConvBwdWeight: the same
// parameters and the same sums term for term (so the same bits), for spatial rank <= 3 with
// the preconditions stated in conv.cu (ops checks them). Each block of exactly
// ConvTileThreads (ConvWeightTileThreads) threads walks the tiles grid-stride.
var (
	ConvFwdTile       = newKernel(Conv, "conv_fwd_tile")
	ConvBwdInputTile  = newKernel(Conv, "conv_bwd_input_tile")
	ConvBwdWeightTile = newKernel(Conv, "conv_bwd_weight_tile")
)

// The tile configurations of conv.cu (CT_X_* and CT_W_*, CT_KMAX): conv_fwd_tile and
// conv_bwd_input_tile compute ConvTileRows x ConvTileCols outputs per tile (rows: sample and
// position; columns: channels of a group) with ConvTileThreads threads; conv_bwd_weight_tile
// ConvWeightTileRows x ConvWeightTileCols (rows: output channels; columns: (input channel,
// kernel offset)) with ConvWeightTileThreads. ConvTileMaxKernel bounds the kernel's offsets
// (kProd) of the first two (their offset table lives in shared memory).
const (
	ConvTileRows, ConvTileCols, ConvTileThreads                   = 128, 64, 128
	ConvWeightTileRows, ConvWeightTileCols, ConvWeightTileThreads = 32, 32, 64
	ConvTileMaxKernel                                             = 512
)
