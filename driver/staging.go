package driver

import (
	"fmt"
	"sync"
	"unsafe"
)

// Staging is a ring of pinned (page-locked) host memory for uploads that do not wait for the
// GPU. An upload from pageable Go memory (CopyHtoDAsync) first waits until its stream has
// finished its earlier work, so an upload between kernels (a minibatch, class labels, indices)
// stalls the host until the GPU drains. Staging.Upload instead copies the data into a free slot
// of pinned memory, queues cuMemcpyHtoDAsync_v2 from that slot on the ring's stream (so the copy
// is ordered after the kernels queued there before it and before those after it) and records an
// event; a slot is written again only after its event has completed. An upload larger than a
// slot goes through consecutive slots, one chunk each; one larger than the whole ring is a
// pageable CopyHtoDAsyncBytes on the same stream. The source slice may be reused as soon as
// Upload returns.
//
// A Staging is safe for concurrent use; Upload and Close require Lock.
type Staging struct {
	x         *Context
	stream    Stream
	mu        sync.Mutex
	mem       unsafe.Pointer // len(events) slots of slotBytes pinned bytes
	slotBytes int
	events    []Event
	used      []bool // events[i] was recorded
	next      int
	closed    bool
}

// NewStaging allocates slots slots of slotBytes pinned bytes (cuMemAllocHost_v2) and their
// events, for uploads in stream order on s. Requires Lock.
func (x *Context) NewStaging(slots, slotBytes int, s Stream) (*Staging, error) {
	if slots < 1 || slotBytes < 1 || int64(slots) > (int64(1)<<40)/int64(slotBytes) {
		return nil, fmt.Errorf("driver: staging of %d slots of %d bytes (want both >= 1, at most 2^40 bytes)", slots, slotBytes)
	}
	st := &Staging{x: x, stream: s, slotBytes: slotBytes, events: make([]Event, slots), used: make([]bool, slots)}
	if err := x.call("cuMemAllocHost_v2", x.c.fn.memAllocHost, uintptr(unsafe.Pointer(&st.mem)),
		uintptr(slots*slotBytes)); err != nil {
		return nil, err
	}
	for i := range st.events {
		e, err := x.NewEvent(false)
		if err != nil {
			st.release()
			return nil, err
		}
		st.events[i] = e
	}
	return st, nil
}

// UploadF32 copies src to dst (see Staging). Requires Lock.
func (s *Staging) UploadF32(dst DevicePtr, src []float32) error {
	return s.upload(dst, unsafe.Pointer(unsafe.SliceData(src)), len(src)*4)
}

// UploadU32 copies src to dst (see Staging). Requires Lock.
func (s *Staging) UploadU32(dst DevicePtr, src []uint32) error {
	return s.upload(dst, unsafe.Pointer(unsafe.SliceData(src)), len(src)*4)
}

func (s *Staging) upload(dst DevicePtr, src unsafe.Pointer, n int) error {
	if n == 0 {
		return nil
	}
	if n > s.slotBytes*len(s.events) {
		return s.x.CopyHtoDAsyncBytes(dst, unsafe.Slice((*byte)(src), n), s.stream)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrReleased
	}
	for off := 0; off < n; off += s.slotBytes {
		c := min(s.slotBytes, n-off)
		i := s.next
		s.next = (i + 1) % len(s.events)
		if s.used[i] {
			if err := s.x.SynchronizeEvent(s.events[i]); err != nil {
				return err
			}
		}
		slot := unsafe.Add(s.mem, i*s.slotBytes)
		copy(unsafe.Slice((*byte)(slot), c), unsafe.Slice((*byte)(unsafe.Add(src, off)), c))
		if err := s.x.call("cuMemcpyHtoDAsync_v2", s.x.c.fn.memcpyHtoDAsync, uintptr(dst)+uintptr(off),
			uintptr(slot), uintptr(c), uintptr(s.stream)); err != nil {
			return err
		}
		if err := s.x.RecordEvent(s.events[i], s.stream); err != nil {
			// The slot's event no longer marks the end of this copy: wait for the copy here.
			s.used[i] = false
			if serr := s.x.StreamSynchronize(s.stream); serr != nil {
				return serr
			}
			return err
		}
		s.used[i] = true
	}
	return nil
}

// Close waits for the queued copies and frees the events and the pinned memory; later uploads
// return ErrReleased. Requires Lock.
func (s *Staging) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var first error
	for i, e := range s.events {
		if s.used[i] {
			if err := s.x.SynchronizeEvent(e); err != nil && first == nil {
				first = err
			}
		}
	}
	if err := s.release(); first == nil {
		first = err
	}
	return first
}

// release destroys the events created so far and frees the pinned memory.
func (s *Staging) release() error {
	var first error
	for _, e := range s.events {
		if e != 0 {
			if err := s.x.DestroyEvent(e); err != nil && first == nil {
				first = err
			}
		}
	}
	if s.mem != nil {
		if err := s.x.call("cuMemFreeHost", s.x.c.fn.memFreeHost, uintptr(s.mem)); err != nil && first == nil {
			first = err
		}
		s.mem = nil
	}
	return first
}
