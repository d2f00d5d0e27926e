package driver

import (
	"strconv"
	"unsafe"
)

// Stream capture and CUDA graphs (the driver API's cuStreamBeginCapture family and cuGraph*).
//
// A capture records the work queued on one stream between BeginCapture and EndCapture into a
// Graph instead of running it; Instantiate turns the graph into a GraphExec, and each
// LaunchGraph replays the whole recording with one call (about a microsecond of host time per
// kernel node less than launching the kernels one by one). The pitfalls, and where this module
// deals with them:
//
//   - Capture modes. BeginCapture takes a CaptureMode that says which other driver calls are
//     refused while the capture is open. CaptureGlobal (the driver's default) and
//     CaptureThreadLocal forbid "potentially unsafe" calls (cuMemAlloc, cuMemFree, synchronous
//     copies, context synchronization...) on the capturing thread (and under CaptureGlobal on
//     every thread), and require EndCapture to come from the thread that called BeginCapture
//     (else CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD). ops issues kernels from its launch queue's
//     goroutine, whose OS thread changes whenever that goroutine idles out, and allocates from
//     the op's own goroutine, so ops captures in CaptureRelaxed and enforces the rules itself
//     (ops/graph.go): no host synchronization, no cuMemFree, no pageable copies while capturing.
//   - Illegal while capturing, whatever the mode: synchronizing the capturing stream or the
//     context (cuStreamSynchronize, cuCtxSynchronize), querying or synchronizing an event
//     recorded during the capture, copies between the device and pageable host memory (they
//     would have to wait), and work on the legacy default stream that would have to join a
//     capturing blocking stream (ops' stream is non-blocking and ops never uses the legacy
//     stream). Such a call fails, usually with ErrStreamCaptureUnsupported or
//     ErrStreamCaptureImplicit, and invalidates the capture: EndCapture then returns
//     ErrStreamCaptureInvalidated and no graph.
//   - Memory allocated during a capture with cuMemAlloc is not part of the graph: the graph
//     records the addresses, and every replay reads and writes those same addresses. The
//     memory must therefore stay allocated, and be given to nobody else, for as long as the
//     graph may be launched (ops keeps it in a private pool owned by the graph). Freeing it
//     while capturing is illegal anyway (cuMemFree synchronizes). The driver also offers
//     graph-owned allocations (cuGraphAddMemAllocNode, cuMemAllocAsync captured as alloc
//     nodes); this module does not use them, so the graph's memory is the pool's.
//   - A GraphExec replays with the kernel parameters it was captured with. What changes from
//     one replay to the next must be read from device memory (ops' step counters), and inputs
//     must be copied into the buffers the graph reads before each launch.
//   - UpdateGraph (cuGraphExecUpdate) refreshes an instantiated graph from a newly captured
//     one of the same topology (same nodes, same kinds, same kernels) at a fraction of the
//     cost of a new Instantiate; a changed topology is ErrGraphExecUpdateFailure and leaves the
//     GraphExec as it was.
//
// The graph symbols are optional: a driver that lacks one still loads, and the calls that
// need it return an *Error wrapping ErrMissingSymbol (see GraphsSupported).

// CaptureMode is a CUstreamCaptureMode (see the notes above).
type CaptureMode int32

// Capture modes (values from the driver API).
const (
	CaptureGlobal      CaptureMode = 0
	CaptureThreadLocal CaptureMode = 1
	CaptureRelaxed     CaptureMode = 2
)

// CaptureStatus is a CUstreamCaptureStatus.
type CaptureStatus int32

// Capture statuses (values from the driver API).
const (
	CaptureNone        CaptureStatus = 0 // the stream is not capturing
	CaptureActive      CaptureStatus = 1 // a capture is open
	CaptureInvalidated CaptureStatus = 2 // a capture is open but failed; EndCapture will return no graph
)

// String returns "none", "active", "invalidated" or the number.
func (s CaptureStatus) String() string {
	switch s {
	case CaptureNone:
		return "none"
	case CaptureActive:
		return "active"
	case CaptureInvalidated:
		return "invalidated"
	}
	return "CaptureStatus(" + strconv.Itoa(int(s)) + ")"
}

// Result codes of stream capture and graphs (values from the driver API).
const (
	ErrStreamCaptureUnsupported Result = 900 // the call is not permitted while the stream is capturing
	ErrStreamCaptureInvalidated Result = 901 // the capture failed earlier (an illegal call)
	ErrStreamCaptureMerge       Result = 902
	ErrStreamCaptureUnmatched   Result = 903 // the capture was not begun on this stream
	ErrStreamCaptureUnjoined    Result = 904
	ErrStreamCaptureIsolation   Result = 905
	ErrStreamCaptureImplicit    Result = 906 // an implicit dependency on the legacy stream
	ErrCapturedEvent            Result = 907 // an event recorded in a capture was queried or waited on
	ErrStreamCaptureWrongThread Result = 908 // EndCapture from another thread (not in CaptureRelaxed)
	ErrGraphExecUpdateFailure   Result = 910 // UpdateGraph: the topology changed
)

func init() {
	for r, t := range map[Result][2]string{
		ErrStreamCaptureUnsupported: {"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when the stream is capturing"},
		ErrStreamCaptureInvalidated: {"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "the capture was invalidated by an earlier error"},
		ErrStreamCaptureMerge:       {"CUDA_ERROR_STREAM_CAPTURE_MERGE", "two independent captures would merge"},
		ErrStreamCaptureUnmatched:   {"CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "the capture was not begun in this stream"},
		ErrStreamCaptureUnjoined:    {"CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "a forked capture was not joined to its origin stream"},
		ErrStreamCaptureIsolation:   {"CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "a dependency would cross the capture boundary"},
		ErrStreamCaptureImplicit:    {"CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "an implicit dependency on the legacy stream while capturing"},
		ErrCapturedEvent:            {"CUDA_ERROR_CAPTURED_EVENT", "operation not permitted on an event recorded in a capture"},
		ErrStreamCaptureWrongThread: {"CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "the capture was ended from another thread"},
		ErrGraphExecUpdateFailure:   {"CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", "the graph update was not performed: its topology changed"},
	} {
		resultText[r] = t
	}
}

// graphFuncs is the table of optional graph entry points (resolveGraph).
type graphFuncs struct {
	beginCapture, endCapture, isCapturing, getCaptureInfo uintptr
	instantiate, launch, execUpdate, execDestroy, destroy uintptr
	captureInfoV2, execUpdateV2                           bool // which signature getCaptureInfo and execUpdate have
	missing                                               string
}

// graphSymbols lists the graph symbols in order of preference: where two names are given, the
// first that resolves wins (the _v2 forms of CUDA 12 have other signatures, see the calls).
// cuStreamGetCaptureInfo is informational: GraphsSupported does not require it.
var graphSymbols = []struct {
	names []string
	field func(g *graphFuncs) *uintptr
}{
	{[]string{"cuStreamBeginCapture_v2"}, func(g *graphFuncs) *uintptr { return &g.beginCapture }},
	{[]string{"cuStreamEndCapture"}, func(g *graphFuncs) *uintptr { return &g.endCapture }},
	{[]string{"cuStreamIsCapturing"}, func(g *graphFuncs) *uintptr { return &g.isCapturing }},
	{[]string{"cuStreamGetCaptureInfo_v2", "cuStreamGetCaptureInfo"}, func(g *graphFuncs) *uintptr { return &g.getCaptureInfo }},
	{[]string{"cuGraphInstantiateWithFlags"}, func(g *graphFuncs) *uintptr { return &g.instantiate }},
	{[]string{"cuGraphLaunch"}, func(g *graphFuncs) *uintptr { return &g.launch }},
	{[]string{"cuGraphExecUpdate_v2", "cuGraphExecUpdate"}, func(g *graphFuncs) *uintptr { return &g.execUpdate }},
	{[]string{"cuGraphExecDestroy"}, func(g *graphFuncs) *uintptr { return &g.execDestroy }},
	{[]string{"cuGraphDestroy"}, func(g *graphFuncs) *uintptr { return &g.destroy }},
}

// resolveGraph fills the graph table with lookup (a symbol's address, 0 when missing); a
// missing symbol is remembered, not an error: the calls that need it return one.
func (g *graphFuncs) resolveGraph(lookup func(name string) uintptr) {
	for _, s := range graphSymbols {
		for _, name := range s.names {
			p := lookup(name)
			if p == 0 {
				continue
			}
			*s.field(g) = p
			g.captureInfoV2 = g.captureInfoV2 || name == "cuStreamGetCaptureInfo_v2"
			g.execUpdateV2 = g.execUpdateV2 || name == "cuGraphExecUpdate_v2"
			break
		}
		if *s.field(g) == 0 && g.missing == "" && s.names[0] != "cuStreamGetCaptureInfo_v2" {
			g.missing = s.names[0]
		}
	}
}

// GraphsSupported returns nil when the loaded driver has every graph symbol this package uses,
// else an *Error naming the first missing one (wrapping ErrMissingSymbol).
func (c *CUDA) GraphsSupported() error {
	if c.gfn.missing == "" {
		return nil
	}
	return &Error{Call: c.gfn.missing, Err: ErrMissingSymbol, Detail: "not in " + c.path}
}

// graphCall is Context.call for a graph symbol: a missing one is an error, not a call.
//
//go:uintptrescapes
//go:noinline
func (x *Context) graphCall(name string, fn uintptr, args ...uintptr) error {
	if fn == 0 {
		return &Error{Call: name, Err: ErrMissingSymbol, Detail: "not in " + x.c.path}
	}
	if x.c.lost.Load() != 0 {
		return x.c.refused(name)
	}
	return x.c.check(name, Result(int32(sysCall(fn, args...))))
}

// Graph is a CUgraph: the work recorded by a capture. Destroy it with DestroyGraph once it has
// been instantiated (a GraphExec does not need its Graph).
type Graph uintptr

// GraphExec is a CUgraphExec: an instantiated graph, launched with LaunchGraph.
type GraphExec uintptr

// BeginCapture starts capturing the work queued on s (cuStreamBeginCapture_v2): until
// EndCapture, kernels, fills and device copies queued on s are recorded, not run. s must not be
// the legacy default stream. See the notes at the top of this file for the mode. Requires Lock.
func (x *Context) BeginCapture(s Stream, mode CaptureMode) error {
	if s == 0 {
		return &Error{Call: "cuStreamBeginCapture_v2", Err: ErrInvalidValue, Detail: "the legacy default stream cannot be captured"}
	}
	return x.graphCall("cuStreamBeginCapture_v2", x.c.gfn.beginCapture, uintptr(s), uintptr(mode))
}

// EndCapture ends the capture of s and returns the recorded graph (cuStreamEndCapture). A
// capture invalidated by an illegal call returns an error wrapping ErrStreamCaptureInvalidated
// and no graph (the stream is no longer capturing either way). Requires Lock.
func (x *Context) EndCapture(s Stream) (Graph, error) {
	var g Graph
	if err := x.graphCall("cuStreamEndCapture", x.c.gfn.endCapture, uintptr(s), uintptr(unsafe.Pointer(&g))); err != nil {
		return 0, err
	}
	if g == 0 {
		return 0, &Error{Call: "cuStreamEndCapture", Err: ErrStreamCaptureInvalidated, Detail: "no graph returned"}
	}
	return g, nil
}

// CaptureStatus returns the capture status of s (cuStreamIsCapturing). Requires Lock.
func (x *Context) CaptureStatus(s Stream) (CaptureStatus, error) {
	st := new(int32)
	if err := x.graphCall("cuStreamIsCapturing", x.c.gfn.isCapturing, uintptr(s), uintptr(unsafe.Pointer(st))); err != nil {
		return 0, err
	}
	return CaptureStatus(*st), nil
}

// CaptureInfo returns the capture status of s and, while a capture is open, its id, unique in
// the process (cuStreamGetCaptureInfo_v2, or the older cuStreamGetCaptureInfo). Requires Lock.
func (x *Context) CaptureInfo(s Stream) (CaptureStatus, uint64, error) {
	out := new(struct {
		st int32
		id uint64
	})
	var err error
	if x.c.gfn.captureInfoV2 { // (stream, status, id, graph, dependencies, count): the last three may be NULL
		err = x.graphCall("cuStreamGetCaptureInfo_v2", x.c.gfn.getCaptureInfo, uintptr(s),
			uintptr(unsafe.Pointer(&out.st)), uintptr(unsafe.Pointer(&out.id)), 0, 0, 0)
	} else {
		err = x.graphCall("cuStreamGetCaptureInfo", x.c.gfn.getCaptureInfo, uintptr(s),
			uintptr(unsafe.Pointer(&out.st)), uintptr(unsafe.Pointer(&out.id)))
	}
	if err != nil {
		return 0, 0, err
	}
	return CaptureStatus(out.st), out.id, nil
}

// InstantiateFlags are cuGraphInstantiateWithFlags' flags.
type InstantiateFlags uint64

// Instantiate flags (values from the driver API).
const (
	// InstantiateAutoFreeOnLaunch frees a graph's own allocations (memory alloc nodes) that
	// were not freed in the graph before the next launch; this module's graphs have none.
	InstantiateAutoFreeOnLaunch InstantiateFlags = 1
	// InstantiateUseNodePriority launches the kernels with the priorities of their nodes.
	InstantiateUseNodePriority InstantiateFlags = 8
)

// Instantiate makes an executable graph of g (cuGraphInstantiateWithFlags). g may be destroyed
// afterwards. Requires Lock.
func (x *Context) Instantiate(g Graph, flags InstantiateFlags) (GraphExec, error) {
	var e GraphExec
	if err := x.graphCall("cuGraphInstantiateWithFlags", x.c.gfn.instantiate,
		uintptr(unsafe.Pointer(&e)), uintptr(g), uintptr(flags)); err != nil {
		return 0, err
	}
	return e, nil
}

// LaunchGraph queues one replay of e on s (cuGraphLaunch): after the work queued on s before
// it, before the work queued after it; one replay at a time runs (launches of one GraphExec are
// ordered). It does not allocate. Requires Lock.
func (x *Context) LaunchGraph(e GraphExec, s Stream) error {
	if x.c.gfn.launch == 0 {
		return x.graphCall("cuGraphLaunch", 0)
	}
	return x.callScalar("cuGraphLaunch", x.c.gfn.launch, uintptr(e), uintptr(s))
}

// UpdateGraph makes e replay g instead (cuGraphExecUpdate_v2, or the older cuGraphExecUpdate),
// where g has e's topology and only node parameters (kernel arguments, copy addresses) differ.
// Otherwise it returns an error wrapping ErrGraphExecUpdateFailure, with the driver's
// CUgraphExecUpdateResult in the detail, and e is unchanged. Requires Lock.
func (x *Context) UpdateGraph(e GraphExec, g Graph) error {
	const name = "cuGraphExecUpdate"
	var err error
	var result int32
	if x.c.gfn.execUpdateV2 { // CUgraphExecUpdateResultInfo: result, errorNode, errorFromNode
		info := new(struct {
			result        int32
			node, another uintptr
		})
		err = x.graphCall(name+"_v2", x.c.gfn.execUpdate, uintptr(e), uintptr(g), uintptr(unsafe.Pointer(info)))
		result = info.result
	} else {
		out := new(struct {
			node   uintptr
			result int32
		})
		err = x.graphCall(name, x.c.gfn.execUpdate, uintptr(e), uintptr(g),
			uintptr(unsafe.Pointer(&out.node)), uintptr(unsafe.Pointer(&out.result)))
		result = out.result
	}
	if de, ok := err.(*Error); ok && result != 0 {
		de.Detail = "CUgraphExecUpdateResult " + strconv.Itoa(int(result))
	}
	return err
}

// DestroyGraphExec destroys e (cuGraphExecDestroy) once its launches are done; the zero
// GraphExec does nothing. Requires Lock.
func (x *Context) DestroyGraphExec(e GraphExec) error {
	if e == 0 {
		return nil
	}
	return x.graphCall("cuGraphExecDestroy", x.c.gfn.execDestroy, uintptr(e))
}

// DestroyGraph destroys g (cuGraphDestroy); the zero Graph does nothing. Requires Lock.
func (x *Context) DestroyGraph(g Graph) error {
	if g == 0 {
		return nil
	}
	return x.graphCall("cuGraphDestroy", x.c.gfn.destroy, uintptr(g))
}
