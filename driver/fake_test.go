//go:build linux && (amd64 || arm64) && !nocuda

package driver

import (
	"errors"
	"testing"

	"github.com/ebitengine/purego"
)

// fakeCUDA returns a CUDA whose cuCtxSetCurrent and cuLaunchKernel are
// libc's labs: labs(first argument) is the returned "CUresult", so a
// Function handle h makes Launch return Result(h). This runs the real call
// path (purego.SyscallN, the Args block, the lost state) without a GPU.
func fakeCUDA(t *testing.T) (*CUDA, *Context) {
	t.Helper()
	lib, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Skipf("no libc.so.6: %v", err)
	}
	labs, err := purego.Dlsym(lib, "labs")
	if err != nil {
		t.Skipf("no labs: %v", err)
	}
	c := &CUDA{path: "fake"}
	c.fn.ctxSetCurrent = labs
	c.fn.launchKernel = labs
	c.fn.memFree = labs
	x := &Context{c: c, h: 0, setArgs: []uintptr{0}}
	return c, x
}

func TestFakeLaunchNoAlloc(t *testing.T) {
	_, x := fakeCUDA(t)
	args := new(Args)
	f := Function{name: "fake"}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := x.Lock(); err != nil {
			t.Fatal(err)
		}
		args.Reset().Ptr(0x1000).U32(3).F32(1.5)
		if err := x.Launch(f, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, 0, args); err != nil {
			t.Fatal(err)
		}
		if err := x.MemFree(0); err != nil { // no call
			t.Fatal(err)
		}
		x.Unlock()
	})
	if allocs != 0 {
		t.Errorf("Lock+Launch+Unlock allocates %v times per call", allocs)
	}
	// The kernelParams block handed to C points at the slots.
	for i := 0; i < args.Len(); i++ {
		if args.ptrs[i] == 0 {
			t.Fatalf("ptrs[%d] not set", i)
		}
	}
}

func TestFakeStickyPoisons(t *testing.T) {
	c, x := fakeCUDA(t)
	if err := x.Lock(); err != nil {
		t.Fatal(err)
	}
	defer x.Unlock()
	err := x.Launch(Function{h: uintptr(ErrLaunchOutOfResources), name: "k"}, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0, nil)
	if !errors.Is(err, ErrLaunchOutOfResources) || IsDeviceLost(err) || c.Lost() != nil {
		t.Fatalf("non-sticky launch error: %v (lost %v)", err, c.Lost())
	}
	err = x.Launch(Function{h: uintptr(ErrIllegalAddress), name: "k"}, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0, nil)
	if !IsDeviceLost(err) || !errors.Is(err, ErrIllegalAddress) {
		t.Fatalf("sticky launch error not device lost: %v", err)
	}
	if err.Error() != "driver: cuLaunchKernel: "+ErrIllegalAddress.Error()+": kernel k" {
		t.Errorf("text = %q", err)
	}
	// From now on nothing reaches the driver: with the function pointers
	// cleared, a call that reached them would return ErrNotInitialized.
	c.fn.launchKernel, c.fn.ctxSetCurrent, c.fn.memFree = 0, 0, 0
	for name, err := range map[string]error{
		"Lost":    x.Lost(),
		"Launch":  x.Launch(Function{}, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0, nil),
		"Lock":    x.Lock(),
		"MemFree": x.MemFree(0x100),
		"MemAlloc": func() error {
			_, err := x.MemAlloc(4)
			return err
		}(),
	} {
		var e *Error
		if !IsDeviceLost(err) || !errors.As(err, &e) || !e.Refused || !errors.Is(err, ErrIllegalAddress) {
			t.Errorf("%s after a sticky error = %v", name, err)
		}
	}
	// A later sticky code does not replace the first.
	_ = c.check("x", ErrLaunchFailed)
	if !errors.Is(c.Lost(), ErrIllegalAddress) {
		t.Errorf("lost state changed: %v", c.Lost())
	}
}

func TestFakeArgsOverflow(t *testing.T) {
	_, x := fakeCUDA(t)
	args := new(Args)
	for i := 0; i <= MaxArgs; i++ {
		args.U32(uint32(i))
	}
	err := x.Launch(Function{name: "k"}, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0, args)
	if !errors.Is(err, ErrInvalidValue) {
		t.Fatalf("overflowing Args: %v", err)
	}
}
