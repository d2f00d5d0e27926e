package driver

import (
	"runtime"
	"strings"
	"unsafe"
)

// Module is a loaded CUmodule. Modules and their Functions are immutable
// handles: they may be copied and used from any goroutine, each method that
// calls the driver on a thread holding the context's Lock, as it says.
type Module struct {
	c *CUDA
	h uintptr
}

// Function is a kernel of a Module (CUfunction), with the name it was looked
// up by (used in error messages).
type Function struct {
	c    *CUDA
	h    uintptr
	name string
}

// Name returns the kernel's name.
func (f Function) Name() string { return f.name }

// jitLogSize is the size of each JIT log buffer.
const jitLogSize = 16 << 10

// CUjit_option values.
const (
	jitInfoLogBuffer       = 3
	jitInfoLogBufferBytes  = 4
	jitErrorLogBuffer      = 5
	jitErrorLogBufferBytes = 6
)

// jitState is the option block of cuModuleLoadDataEx. It lives on the heap
// (its address is converted in a go:uintptrescapes call) so the addresses of
// the log buffers stored in vals stay valid during the call.
type jitState struct {
	opts [4]int32   // CUjit_option
	vals [4]uintptr // void* option values; the size entries are written back
	info [jitLogSize]byte
	errs [jitLogSize]byte
}

// LoadModule JIT-compiles PTX text for the context's device and loads it
// (cuModuleLoadDataEx). The text need not be NUL-terminated (a terminated
// copy is passed). When compilation fails the *Error's Detail holds the JIT
// error log. Requires Lock.
func (x *Context) LoadModule(ptx []byte) (Module, error) {
	img := make([]byte, len(ptx)+1)
	copy(img, ptx)
	st := new(jitState)
	st.opts = [4]int32{jitInfoLogBuffer, jitInfoLogBufferBytes, jitErrorLogBuffer, jitErrorLogBufferBytes}
	st.vals[0] = uintptr(unsafe.Pointer(&st.info[0]))
	st.vals[1] = jitLogSize
	st.vals[2] = uintptr(unsafe.Pointer(&st.errs[0]))
	st.vals[3] = jitLogSize
	var h uintptr
	err := x.call("cuModuleLoadDataEx", x.c.fn.moduleLoadDataEx,
		uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&img[0])), uintptr(len(st.opts)),
		uintptr(unsafe.Pointer(&st.opts[0])), uintptr(unsafe.Pointer(&st.vals[0])))
	runtime.KeepAlive(st)
	runtime.KeepAlive(img)
	if err != nil {
		if e, ok := err.(*Error); ok && !e.Refused {
			if log := cLog(st.errs[:], st.vals[3]); log != "" {
				e.Detail = "JIT log: " + log
			}
		}
		return Module{}, err
	}
	return Module{c: x.c, h: h}, nil
}

// cLog returns the text the driver wrote into buf (n bytes reported, NUL
// terminated), trimmed.
func cLog(buf []byte, n uintptr) string {
	if n > uintptr(len(buf)) {
		n = uintptr(len(buf))
	}
	s := buf[:n]
	for i, b := range s {
		if b == 0 {
			s = s[:i]
			break
		}
	}
	return strings.TrimSpace(string(s))
}

// Function looks up a kernel by its .entry name (cuModuleGetFunction).
// Requires Lock.
func (m Module) Function(name string) (Function, error) {
	if m.c == nil {
		return Function{}, &Error{Call: "cuModuleGetFunction", Err: ErrInvalidHandle}
	}
	if m.c.lost.Load() != 0 {
		return Function{}, m.c.refused("cuModuleGetFunction")
	}
	cname := make([]byte, len(name)+1)
	copy(cname, name)
	var h uintptr
	err := m.c.call("cuModuleGetFunction", m.c.fn.moduleGetFunction,
		uintptr(unsafe.Pointer(&h)), m.h, uintptr(unsafe.Pointer(&cname[0])))
	runtime.KeepAlive(cname)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Detail = "kernel " + name
		}
		return Function{}, err
	}
	return Function{c: m.c, h: h, name: name}, nil
}

// UnloadModule unloads m (cuModuleUnload); its Functions become invalid.
// Requires Lock.
func (x *Context) UnloadModule(m Module) error {
	return x.callScalar("cuModuleUnload", x.c.fn.moduleUnload, m.h)
}

// CUfunction_attribute values.
const (
	funcAttrMaxThreadsPerBlock  = 0
	funcAttrMaxDynamicSharedMem = 8
)

// MaxThreadsPerBlock returns the largest block this kernel can be launched
// with on its device (cuFuncGetAttribute). Requires Lock.
func (f Function) MaxThreadsPerBlock() (int, error) {
	if f.c == nil {
		return 0, &Error{Call: "cuFuncGetAttribute", Err: ErrInvalidHandle}
	}
	if f.c.lost.Load() != 0 {
		return 0, f.c.refused("cuFuncGetAttribute")
	}
	var v int32
	if err := f.c.call("cuFuncGetAttribute", f.c.fn.funcGetAttribute,
		uintptr(unsafe.Pointer(&v)), funcAttrMaxThreadsPerBlock, f.h); err != nil {
		return 0, err
	}
	return int(v), nil
}

// SetMaxDynamicSharedBytes allows launches of f with up to n bytes of
// dynamic shared memory (cuFuncSetAttribute
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), needed above 48 KiB.
// Requires Lock.
func (f Function) SetMaxDynamicSharedBytes(n int) error {
	if f.c == nil {
		return &Error{Call: "cuFuncSetAttribute", Err: ErrInvalidHandle}
	}
	if f.c.lost.Load() != 0 {
		return f.c.refused("cuFuncSetAttribute")
	}
	if n < 0 || n > 1<<31-1 {
		return &Error{Call: "cuFuncSetAttribute", Err: ErrInvalidValue}
	}
	return f.c.callScalar("cuFuncSetAttribute", f.c.fn.funcSetAttribute, f.h, funcAttrMaxDynamicSharedMem, uintptr(n))
}
