package driver

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestResultStaticText(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want string
	}{
		{ErrOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY: out of memory"},
		{ErrNoDevice, "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"},
		{Success, "CUDA_SUCCESS: no error"},
		{Result(12345), "CUDA_ERROR_12345: unrecognised CUDA result"},
	} {
		name, desc := tc.r.staticText()
		if got := name + ": " + desc; got != tc.want {
			t.Errorf("%d: got %q, want %q", tc.r, got, tc.want)
		}
	}
	// Whether or not a libcuda was loaded, the name part is the identifier.
	if got := ErrOutOfMemory.Error(); !strings.HasPrefix(got, "CUDA_ERROR_OUT_OF_MEMORY: ") {
		t.Errorf("Error() = %q", got)
	}
	if got := ErrInvalidContext.Name(); got != "CUDA_ERROR_INVALID_CONTEXT" {
		t.Errorf("Name() = %q", got)
	}
	for r, txt := range resultText {
		if !strings.HasPrefix(txt[0], "CUDA_") || txt[1] == "" {
			t.Errorf("bad table entry %d: %q", r, txt)
		}
	}
}

func TestErrorWrapping(t *testing.T) {
	var err error = &Error{Call: "cuMemAlloc_v2", Err: ErrOutOfMemory}
	if got := err.Error(); !strings.HasPrefix(got, "driver: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: ") {
		t.Errorf("Error() = %q", got)
	}
	wrapped := fmt.Errorf("ops: zeros: %w", err)
	if !errors.Is(wrapped, ErrOutOfMemory) {
		t.Error("errors.Is(wrapped, ErrOutOfMemory) = false")
	}
	if errors.Is(wrapped, ErrNoDevice) || errors.Is(wrapped, ErrDeviceLost) || IsDeviceLost(wrapped) {
		t.Error("out of memory matched another sentinel")
	}
	var r Result
	if !errors.As(wrapped, &r) || r != ErrOutOfMemory {
		t.Errorf("errors.As Result = %v", r)
	}
	var e *Error
	if !errors.As(wrapped, &e) || e.Call != "cuMemAlloc_v2" {
		t.Errorf("errors.As *Error = %v", e)
	}

	jit := &Error{Call: "cuModuleLoadDataEx", Err: ErrInvalidPTX, Detail: "JIT log: line 6; error"}
	if got := jit.Error(); !strings.HasSuffix(got, ": JIT log: line 6; error") {
		t.Errorf("detail missing: %q", got)
	}
	ref := &Error{Call: "cuMemAlloc_v2", Err: ErrIllegalAddress, Refused: true}
	if got := ref.Error(); !strings.HasPrefix(got, "driver: cuMemAlloc_v2: not issued, device lost earlier: CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Errorf("refused text = %q", got)
	}
	if !IsDeviceLost(ref) || !errors.Is(ref, ErrIllegalAddress) {
		t.Error("refused error does not match ErrDeviceLost and its Result")
	}
}

func TestSticky(t *testing.T) {
	sticky := map[Result]bool{700: true, 702: true, 710: true, 714: true, 715: true,
		716: true, 717: true, 718: true, 719: true, 911: true}
	for r := Result(0); r < 1000; r++ {
		if r.Sticky() != sticky[r] {
			t.Errorf("%d: Sticky() = %v", r, r.Sticky())
		}
		if errors.Is(r, ErrDeviceLost) != sticky[r] {
			t.Errorf("%d: errors.Is(ErrDeviceLost) = %v", r, !sticky[r])
		}
		if IsDeviceLost(fmt.Errorf("x: %w", &Error{Call: "f", Err: r})) != sticky[r] {
			t.Errorf("%d: IsDeviceLost through wrapping disagrees", r)
		}
	}
	if IsDeviceLost(nil) || IsDeviceLost(errors.New("x")) || IsDeviceLost(ErrUnknown) {
		t.Error("non-sticky error reported as device lost")
	}
}

func TestFFTResult(t *testing.T) {
	if got := FFTInvalidPlan.Error(); got != "CUFFT_INVALID_PLAN: invalid plan handle" {
		t.Errorf("got %q", got)
	}
	if got := FFTResult(99).Error(); got != "CUFFT_99: unrecognised cuFFT result" {
		t.Errorf("got %q", got)
	}
	for r := FFTResult(0); r <= 20; r++ {
		if _, ok := fftText[r]; !ok {
			t.Errorf("no text for cufftResult %d", r)
		}
	}
	err := fmt.Errorf("ops: rfft: %w", &Error{Call: "cufftExecR2C", Err: FFTExecFailed})
	if !errors.Is(err, FFTExecFailed) || errors.Is(err, FFTInvalidPlan) || IsDeviceLost(err) {
		t.Error("FFTResult matching through wrapping is wrong")
	}
	if !strings.Contains(err.Error(), "driver: cufftExecR2C: CUFFT_EXEC_FAILED: ") {
		t.Errorf("got %q", err)
	}
	if FFTR2C.String() != "R2C" || FFTC2R.String() != "C2R" || FFTKind(1).String() != "FFTKind(1)" {
		t.Error("FFTKind.String")
	}
}

func TestArgsPacking(t *testing.T) {
	var a Args
	a.Ptr(0x1122334455667788).U32(7).F32(2.5).I32(-3).U64(1 << 40).I64(-1)
	if a.Len() != 6 {
		t.Fatalf("Len = %d", a.Len())
	}
	want := []uint64{0x1122334455667788, 7, 0x40200000, 0xfffffffd, 1 << 40, 1<<64 - 1}
	for i, w := range want {
		if a.slots[i] != w {
			t.Errorf("slot %d = %#x, want %#x", i, a.slots[i], w)
		}
	}
	var b Args
	b.U64(^uint64(0)).SetValues(a.Values()) // SetValues replaces what b held
	if b.Len() != 6 || b.slots != a.slots {
		t.Errorf("SetValues(Values()): len %d slots %#x, want %#x", b.Len(), b.slots[:6], a.slots[:6])
	}
	a.Reset()
	a.U64(^uint64(0)).Reset().U32(5) // a 4-byte value clears its slot's upper half
	if a.Len() != 1 || a.slots[0] != 5 {
		t.Errorf("after Reset: len %d slot %#x", a.Len(), a.slots[0])
	}
	for i := 0; i < MaxArgs+1; i++ {
		a.U32(1)
	}
	if !a.overflow || a.Len() != MaxArgs {
		t.Errorf("overflow not recorded: len %d", a.Len())
	}
	a.Reset()
	if a.overflow {
		t.Error("Reset kept overflow")
	}
}

func TestZeroValuesDoNotCrash(t *testing.T) {
	var c CUDA
	if _, err := c.DeviceCount(); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("zero CUDA DeviceCount: %v", err)
	}
	if _, err := (Module{}).Function("k"); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("zero Module Function: %v", err)
	}
	if _, err := (Function{}).MaxThreadsPerBlock(); !errors.Is(err, ErrInvalidHandle) {
		t.Errorf("zero Function attribute: %v", err)
	}
}

// TestZeroValues: the zero Device reports an error instead of dereferencing a nil library, and
// the zero Error prints.
func TestZeroValues(t *testing.T) {
	var d Device
	if _, err := d.Name(); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("Name of the zero Device: %v", err)
	}
	if _, err := d.SMCount(); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("SMCount of the zero Device: %v", err)
	}
	if _, err := d.TotalMem(); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("TotalMem of the zero Device: %v", err)
	}
	if s := (&Error{Call: "x"}).Error(); s == "" {
		t.Error("empty message")
	}
}
