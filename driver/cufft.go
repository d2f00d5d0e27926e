package driver

import (
	"os"
	"strconv"
	"unsafe"
)

// CUFFT is one loaded libcufft. It is safe for concurrent use, but a plan
// must not be used by two goroutines at once. cuFFT works in the CUDA
// runtime's current context, which is the primary context: every method
// except Version requires the caller to hold Lock on the primary Context of
// the device the plans belong to. The library is never unloaded.
type CUFFT struct {
	path string
	lib  uintptr
	fn   struct {
		getVersion, planMany, setStream, getSize, execR2C, execC2R, destroy uintptr
	}
}

// LoadCUFFT opens libcufft: $TORCHLEAN_CUFFT when set (and then only that
// path), else the first of libcufft.so.12 (CUDA 13), libcufft.so.11 (CUDA
// 12), libcufft.so.10 (CUDA 11) and libcufft.so that loads. It needs no GPU.
// Errors wrap ErrNoLibrary or ErrMissingSymbol.
func LoadCUFFT() (*CUFFT, error) {
	paths := []string{"libcufft.so.12", "libcufft.so.11", "libcufft.so.10", "libcufft.so"}
	if p := os.Getenv("TORCHLEAN_CUFFT"); p != "" {
		paths = []string{p}
	}
	lib, path, err := openFirst("libcufft", paths)
	if err != nil {
		return nil, err
	}
	f := &CUFFT{path: path, lib: lib}
	if err := resolve(lib, path, []symbol{
		{"cufftGetVersion", &f.fn.getVersion},
		{"cufftPlanMany", &f.fn.planMany},
		{"cufftSetStream", &f.fn.setStream},
		{"cufftGetSize", &f.fn.getSize},
		{"cufftExecR2C", &f.fn.execR2C},
		{"cufftExecC2R", &f.fn.execC2R},
		{"cufftDestroy", &f.fn.destroy},
	}); err != nil {
		return nil, err
	}
	return f, nil
}

// Path returns the library path that was opened.
func (f *CUFFT) Path() string { return f.path }

//go:uintptrescapes
//go:noinline
func (f *CUFFT) call(name string, fn uintptr, args ...uintptr) error {
	if r := FFTResult(int32(sysCall(fn, args...))); r != FFTSuccess {
		return &Error{Call: name, Err: r}
	}
	return nil
}

// Version returns cufftGetVersion, e.g. 10900 for cuFFT 10.9 (CUDA 11.8) or
// 11200+ for CUDA 12. It needs no GPU and no Lock.
func (f *CUFFT) Version() (int, error) {
	var v int32
	if err := f.call("cufftGetVersion", f.fn.getVersion, uintptr(unsafe.Pointer(&v))); err != nil {
		return 0, err
	}
	return int(v), nil
}

// FFTPlan is a cufftHandle.
type FFTPlan int32

// FFTKind is a cufftType.
type FFTKind int32

// Transform kinds (single precision).
const (
	FFTR2C FFTKind = 0x2a // real to complex (interleaved), forward
	FFTC2R FFTKind = 0x2c // complex (interleaved) to real, inverse, unnormalised
)

// String returns "R2C", "C2R" or the number.
func (k FFTKind) String() string {
	switch k {
	case FFTR2C:
		return "R2C"
	case FFTC2R:
		return "C2R"
	}
	return "FFTKind(" + strconv.Itoa(int(k)) + ")"
}

// PlanMany1D makes a plan for batch 1-D transforms of logical length n
// (cufftPlanMany with rank 1 and the advanced layout): transform b reads
// element i of its input at in[b*idist + i*istride] and writes element k of
// its output at out[b*odist + k*ostride], in elements of the input and output
// type (float32 for real, complex64 for complex data; a real signal of
// length n has n/2+1 complex coefficients). Requires Lock.
func (f *CUFFT) PlanMany1D(n, batch int, kind FFTKind, istride, idist, ostride, odist int) (FFTPlan, error) {
	for _, v := range [...]int{n, batch, istride, idist, ostride, odist} {
		if v < 0 || v > 1<<31-1 {
			return 0, &Error{Call: "cufftPlanMany", Err: FFTInvalidValue,
				Detail: "size or layout argument out of range: " + strconv.Itoa(v)}
		}
	}
	if kind != FFTR2C && kind != FFTC2R {
		return 0, &Error{Call: "cufftPlanMany", Err: FFTInvalidType, Detail: kind.String()}
	}
	if n < 1 || batch < 1 {
		return 0, &Error{Call: "cufftPlanMany", Err: FFTInvalidSize}
	}
	// p: plan, n, inembed, onembed as C ints, kept on the heap for the call.
	p := new([4]int32)
	p[1] = int32(n)
	p[2], p[3] = int32(n), int32(n/2+1)
	if kind == FFTC2R {
		p[2], p[3] = p[3], p[2]
	}
	err := f.call("cufftPlanMany", f.fn.planMany,
		uintptr(unsafe.Pointer(&p[0])), 1, uintptr(unsafe.Pointer(&p[1])),
		uintptr(unsafe.Pointer(&p[2])), uintptr(istride), uintptr(idist),
		uintptr(unsafe.Pointer(&p[3])), uintptr(ostride), uintptr(odist),
		uintptr(kind), uintptr(batch))
	if err != nil {
		return 0, err
	}
	return FFTPlan(p[0]), nil
}

// SetStream makes p's executions run on s (cufftSetStream). Requires Lock.
func (f *CUFFT) SetStream(p FFTPlan, s Stream) error {
	return f.call("cufftSetStream", f.fn.setStream, uintptr(p), uintptr(s))
}

// WorkSize returns the bytes of the work area cuFFT allocated for p (cufftGetSize), device
// memory outside every allocator of the caller's. Requires Lock.
func (f *CUFFT) WorkSize(p FFTPlan) (int64, error) {
	size := new(uint64) // a size_t, on the heap for the call
	if err := f.call("cufftGetSize", f.fn.getSize, uintptr(p), uintptr(unsafe.Pointer(size))); err != nil {
		return 0, err
	}
	return int64(*size), nil
}

// ExecR2C queues the forward real-to-complex transform of an FFTR2C plan
// (cufftExecR2C) on the plan's stream. Requires Lock.
func (f *CUFFT) ExecR2C(p FFTPlan, in, out DevicePtr) error {
	return f.call("cufftExecR2C", f.fn.execR2C, uintptr(p), uintptr(in), uintptr(out))
}

// ExecC2R queues the inverse complex-to-real transform of an FFTC2R plan
// (cufftExecC2R; unnormalised, and it may overwrite its input) on the plan's
// stream. Requires Lock.
func (f *CUFFT) ExecC2R(p FFTPlan, in, out DevicePtr) error {
	return f.call("cufftExecC2R", f.fn.execC2R, uintptr(p), uintptr(in), uintptr(out))
}

// Destroy frees p (cufftDestroy). Requires Lock.
func (f *CUFFT) Destroy(p FFTPlan) error {
	return f.call("cufftDestroy", f.fn.destroy, uintptr(p))
}
