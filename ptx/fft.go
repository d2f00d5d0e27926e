package ptx

// FFT is the family of our own exact FFT (fft.cu; cpu/fft.go): Stockham stages, Bluestein's
// chirp-z steps and the packing of the real transforms, grid-stride over their elements, and the
// row kernels, which run a whole transform of a row in one block's shared memory.
const FFT Module = "fft"

// FFT kernels. FftStage is one Stockham stage of any radix of the plan (2, 4, or an odd prime up
// to FFT_MAX_PRIME); FftRow, RfftRow and IrfftRow run every stage of a plan (and, for the real
// transforms, the packing before and after) on each row in one launch, with the bits of the
// per-stage kernels; the others are one pass each.
var (
	FftStage      = newKernel(FFT, "fft_stage")
	FftWiden      = newKernel(FFT, "fft_widen")
	RfftPost      = newKernel(FFT, "rfft_post")
	RfftPostOdd   = newKernel(FFT, "rfft_post_odd")
	IrfftPre      = newKernel(FFT, "irfft_pre")
	IrfftPreOdd   = newKernel(FFT, "irfft_pre_odd")
	IrfftOut      = newKernel(FFT, "irfft_out")
	IrfftOutOdd   = newKernel(FFT, "irfft_out_odd")
	BluesteinPre  = newKernel(FFT, "bluestein_pre")
	BluesteinMul  = newKernel(FFT, "bluestein_mul")
	BluesteinPost = newKernel(FFT, "bluestein_post")
	FftRow        = newKernel(FFT, "fft_row")
	RfftRow       = newKernel(FFT, "rfft_row")
	IrfftRow      = newKernel(FFT, "irfft_row")
)
