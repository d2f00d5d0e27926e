package ops

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
)

// Buffer is a length-n float32 array on one device. Kernels borrow their input buffers and
// return fresh ones. Release gives the memory back at once; a buffer that becomes unreachable
// without Release is released by the garbage collector. Using a released buffer is an error,
// never a read of freed memory, also when Release races with an op on another goroutine: the op
// either fails with ErrReleased or runs to completion on the memory, which goes back to the
// device when the op is done with it.
//
// No op writes into a buffer it did not create, except the optimizer steps (SGDStep, AdamStep),
// which update their parameter and state buffers in place: running one while another goroutine
// reads or updates the same buffers is a data race, as it would be for a Go slice.
type Buffer struct {
	dev   *Device
	n     int
	mem   storage
	state atomic.Int64 // releasedBit | 2 x the ops using the buffer now (see use)
	freed func()       // if set, run after the memory went back (Indices return their host copy)
}

// releasedBit is the bit of Buffer.state that Release sets.
const releasedBit = 1

// ErrReleased is returned (wrapped) when a released buffer is used.
var ErrReleased = errors.New("ops: use of released buffer")

// ErrOutOfMemory is returned (wrapped) when a device cannot hold a new buffer; on CUDA the error
// also wraps the driver's (driver.ErrOutOfMemory).
var ErrOutOfMemory = errors.New("ops: out of memory")

// opError is an error of the op named op: its message is "ops: <op>: " and err's own message
// without its "ops: " prefix; it wraps err (errors.Is(err, ErrOutOfMemory) still holds).
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	return "ops: " + e.op + ": " + strings.TrimPrefix(e.err.Error(), "ops: ")
}

func (e *opError) Unwrap() error { return e.err }

// asOp renames the op of err, an error of an internal op that implements the public op (its
// "ops: <internal>: " prefix becomes "ops: <op>: "); other errors and nil are returned as they
// are.
func asOp(op string, err error) error {
	if e, ok := err.(*opError); ok && e.op != op {
		return &opError{op, e.err}
	}
	return err
}

// opErr names op in err (nil stays nil).
func opErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return &opError{op, err}
}

// maxBufferLen bounds a buffer's length: 2^46 floats (256 TiB), beyond which byte counts
// overflow and no allocator could serve the request anyway; where int has 32 bits, the most
// floats whose byte count fits in an int.
const maxBufferLen = min(1<<46, math.MaxInt/4)

// newBuffer allocates an uninitialized length-n buffer on d.
func newBuffer(d *Device, n int) (*Buffer, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("ops: negative length %d", n)
	}
	if n > maxBufferLen {
		return nil, fmt.Errorf("%w: a buffer of %d floats (more than %d)", ErrOutOfMemory, n, maxBufferLen)
	}
	b := &Buffer{dev: d, n: n}
	if n == 0 {
		return b, nil
	}
	mem, err := d.be.alloc(n)
	if err != nil {
		return nil, err
	}
	b.mem = mem
	d.stats.allocated(4 * int64(n))
	// The garbage collector's safety net. A finalizer set and cleared costs about half of
	// runtime.AddCleanup + Cleanup.Stop, and every op pays it once.
	runtime.SetFinalizer(b, (*Buffer).Release)
	return b, nil
}

// view returns the n elements of b from off on as a Buffer that borrows b's memory: for the
// operand of one launch, made and dropped while the caller holds a use of b (it is never
// released, and its memory is b's).
func (b *Buffer) view(off, n int) *Buffer {
	return &Buffer{dev: b.dev, n: n, mem: b.mem.at(off)}
}

// Device returns the device the buffer lives on.
func (b *Buffer) Device() *Device {
	if b == nil {
		return nil
	}
	return b.dev
}

// Len returns the number of float32 elements; 0 once released.
func (b *Buffer) Len() int {
	if b == nil || b.state.Load()&releasedBit != 0 {
		return 0
	}
	return b.n
}

// Release returns the buffer's memory to its device. It reports whether this call released a
// live allocation: true the first time, false afterwards (and for empty buffers).
// While ops on other goroutines use the buffer, the memory goes back when the last of them is done.
func (b *Buffer) Release() bool {
	if b == nil {
		return false
	}
	for {
		s := b.state.Load()
		if s&releasedBit != 0 {
			return false
		}
		if b.state.CompareAndSwap(s, s|releasedBit) {
			if b.n == 0 {
				return false
			}
			runtime.SetFinalizer(b, nil)
			if s == 0 {
				b.free()
			}
			return true
		}
	}
}

// free returns the memory of a released buffer that no op uses.
func (b *Buffer) free() {
	b.dev.be.free(b.mem, b.n)
	b.dev.stats.released(4 * int64(b.n))
	b.mem = storage{}
	if b.freed != nil {
		b.freed()
	}
}

// use marks b as used by an op that is about to read or write its memory (once other goroutines
// can see b, b.mem may be read only between use and done): until the matching done, Release
// defers the memory's return. An error for a nil or released buffer.
func (b *Buffer) use() error {
	if err := b.valid(); err != nil {
		return err
	}
	for {
		s := b.state.Load()
		if s&releasedBit != 0 {
			return ErrReleased
		}
		if b.state.CompareAndSwap(s, s+2) {
			return nil
		}
	}
}

// done ends one use; the last use of a non-empty buffer released meanwhile returns its memory.
func (b *Buffer) done() {
	if b.state.Add(-2) == releasedBit && b.n > 0 {
		b.free()
	}
}

// useAll calls use on every buffer of op and checks that they are on one device; on error none
// stays in use. doneAll ends the uses.
func useAll(op string, bufs ...*Buffer) error {
	for k, x := range bufs {
		err := x.useIn(op)
		if err == nil {
			if err = onDevice(op, x, bufs[0].dev); err != nil {
				x.done()
			}
		}
		if err != nil {
			doneAll(bufs[:k]...)
			return err
		}
	}
	return nil
}

func doneAll(bufs ...*Buffer) {
	for _, x := range bufs {
		x.done()
	}
}

// ReleaseThen releases every workspace buffer and returns keep: cleanup threaded through a
// result, as the tape formulas do.
func ReleaseThen(keep *Buffer, workspace ...*Buffer) *Buffer {
	for _, w := range workspace {
		if w != keep {
			w.Release()
		}
	}
	return keep
}

// Err returns the error an op would give for using b: nil while b is live, ErrReleased after
// Release, an error for a nil or zero Buffer.
func (b *Buffer) Err() error { return b.live() }

// live checks that b can be used (ops that touch b's memory also call use).
func (b *Buffer) live() error {
	if err := b.valid(); err != nil {
		return err
	}
	if b.state.Load()&releasedBit != 0 {
		return ErrReleased
	}
	return nil
}

// valid rejects a nil Buffer and the zero Buffer (one not made by this package).
func (b *Buffer) valid() error {
	switch {
	case b == nil:
		return errors.New("ops: nil buffer")
	case b.dev == nil:
		return errors.New("ops: zero Buffer (buffers come from this package's functions)")
	}
	return nil
}

// liveIn is live with op named in the error ("ops: <op>: use of released buffer").
func (b *Buffer) liveIn(op string) error { return opErr(op, b.live()) }

// useIn is use with op named in the error.
func (b *Buffer) useIn(op string) error { return opErr(op, b.use()) }

// FromFloat32 uploads host data into a new buffer on d (every call a distinct buffer).
func FromFloat32(d *Device, data []float32) (*Buffer, error) {
	b, err := newBuffer(d, len(data))
	if err != nil || len(data) == 0 {
		return b, opErr("upload", err)
	}
	if err := d.be.upload(b.mem, data); err != nil {
		b.Release()
		return nil, opErr("upload", err)
	}
	return b, nil
}

// FromFloat64 rounds each element to float32 (to nearest even) and uploads it.
func FromFloat64(d *Device, data []float64) (*Buffer, error) {
	f := make([]float32, len(data))
	for i, v := range data {
		f[i] = float32(v)
	}
	return FromFloat32(d, f)
}

// upload writes data into the existing buffer b (of len(data) floats) on b's device.
func upload(op string, b *Buffer, data []float32) error {
	if err := b.useIn(op); err != nil {
		return err
	}
	defer b.done()
	return opErr(op, b.dev.be.upload(b.mem, data))
}

// Float32s downloads the buffer into a new slice. A slice larger than the host memory available
// now is ErrOutOfMemory, as for a CPU buffer (the check starts at 256 MiB).
func (b *Buffer) Float32s() ([]float32, error) { return b.download(4) }

// download is Float32s for a caller that will hold perElem bytes of host memory per element (4
// for the float32 slice, 12 for Float64s with its float64 slice), which hostCheck checks first.
func (b *Buffer) download(perElem uint64) ([]float32, error) {
	if err := b.useIn("download"); err != nil {
		return nil, err
	}
	defer b.done()
	if err := hostCheck(perElem * uint64(b.n)); err != nil {
		return nil, opErr("download", err)
	}
	out := make([]float32, b.n)
	if b.n == 0 {
		return out, nil
	}
	if err := b.dev.be.download(out, b.mem); err != nil {
		return nil, opErr("download", err)
	}
	return out, nil
}

// Float64s downloads the buffer and widens each element exactly (ErrOutOfMemory as Float32s, for
// the float32 and the float64 slices together).
func (b *Buffer) Float64s() ([]float64, error) {
	f, err := b.download(12)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out, nil
}

// Zeros returns a new length-n buffer of +0.0.
func Zeros(d *Device, n int) (*Buffer, error) { return full("zeros", d, n, 0) }

// Full returns a new length-n buffer with every element float32(v).
func Full(d *Device, n int, v float64) (*Buffer, error) { return full("full", d, n, v) }

// full is Full, its errors naming op.
func full(op string, d *Device, n int, v float64) (*Buffer, error) {
	b, err := newBuffer(d, n)
	if err != nil || n == 0 {
		return b, opErr(op, err)
	}
	if err := d.be.fill(b.mem, n, float32(v)); err != nil {
		b.Release()
		return nil, opErr(op, err)
	}
	return b, nil
}

// Copy returns a new buffer with the same contents (a device-to-device copy).
func Copy(x *Buffer) (*Buffer, error) { return copyAs("copy", x) }

// copyAs is Copy, its errors naming op.
func copyAs(op string, x *Buffer) (*Buffer, error) {
	if err := x.useIn(op); err != nil {
		return nil, err
	}
	defer x.done()
	out, err := newBuffer(x.dev, x.n)
	if err != nil || x.n == 0 {
		return out, opErr(op, err)
	}
	if err := x.dev.be.copy(out.mem, x.mem, x.n); err != nil {
		out.Release()
		return nil, opErr(op, err)
	}
	return out, nil
}

// To copies the buffer to device d (through host memory) and returns the copy. The result is
// always a new buffer, also when d is b's own device (a device-side copy, as Copy), so that it
// can be released independently of b; PyTorch's .to returns the same tensor in that case.
func (b *Buffer) To(d *Device) (*Buffer, error) {
	if err := b.liveIn("to"); err != nil {
		return nil, err
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	if d == b.dev {
		return copyAs("to", b)
	}
	host, err := b.Float32s()
	if err != nil {
		return nil, err
	}
	return FromFloat32(d, host)
}

// sameLength checks that all buffers have the length of the first, and returns it.
func sameLength(op string, bs ...*Buffer) (int, error) {
	n := bs[0].n
	for i, b := range bs[1:] {
		if b.n != n {
			return 0, fmt.Errorf("ops: %s: size mismatch (operand 0 has %d elements, operand %d has %d)", op, n, i+1, b.n)
		}
	}
	return n, nil
}
