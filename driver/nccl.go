package driver

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"unsafe"
)

// NCCL is one loaded libnccl (NVIDIA's collective communication library, version 2). It is safe
// for concurrent use, but a communicator is used by one goroutine at a time, as NCCL requires.
// NCCL works in the CUDA runtime's current context, the device's primary context: every method
// except Version, UniqueID and ErrorString needs the caller to hold Lock on the primary Context
// of the communicator's device. The library is never unloaded.
//
// Communicator creation (CommInitRank) blocks until every rank of the group has called it, and
// a collective whose peers never arrive never completes: Abort (from any goroutine) is the way
// out, which the callers above use with a timeout (ops' communicators, the dist package).
type NCCL struct {
	path    string
	lib     uintptr
	version int
	fn      ncclFuncs
}

// ncclFuncs is the table of libnccl entry points, filled by one loop over ncclSymbols; the
// optional ones stay 0 when the library lacks them.
type ncclFuncs struct {
	getVersion, getUniqueID, commInitRank, commInitAll                   uintptr
	allReduce, broadcast, reduceScatter, allGather, groupStart, groupEnd uintptr
	commGetAsyncError, commAbort, commDestroy, getErrorString            uintptr
	// optional
	commInitRankScalable, send, recv uintptr
}

func (f *ncclFuncs) symbols() []symbol {
	return []symbol{
		{"ncclGetVersion", &f.getVersion},
		{"ncclGetUniqueId", &f.getUniqueID},
		{"ncclCommInitRank", &f.commInitRank},
		{"ncclCommInitAll", &f.commInitAll},
		{"ncclAllReduce", &f.allReduce},
		{"ncclBroadcast", &f.broadcast},
		{"ncclReduceScatter", &f.reduceScatter},
		{"ncclAllGather", &f.allGather},
		{"ncclGroupStart", &f.groupStart},
		{"ncclGroupEnd", &f.groupEnd},
		{"ncclCommGetAsyncError", &f.commGetAsyncError},
		{"ncclCommAbort", &f.commAbort},
		{"ncclCommDestroy", &f.commDestroy},
		{"ncclGetErrorString", &f.getErrorString},
	}
}

func (f *ncclFuncs) optional() []symbol {
	return []symbol{
		{"ncclCommInitRankScalable", &f.commInitRankScalable}, // NCCL 2.23
		{"ncclSend", &f.send}, // NCCL 2.7
		{"ncclRecv", &f.recv},
	}
}

// NCCLUniqueIDBytes is NCCL_UNIQUE_ID_BYTES, the size of an ncclUniqueId.
const NCCLUniqueIDBytes = 128

// NCCLUniqueID is an ncclUniqueId: 128 opaque bytes made by one rank (UniqueID) and handed to
// every rank of a group (by the caller: in one process by value, across processes through a
// rendezvous), which passes it to CommInitRank.
type NCCLUniqueID [NCCLUniqueIDBytes]byte

// Comm is an ncclComm_t.
type Comm uintptr

// NCCLType is an ncclDataType_t.
type NCCLType int32

// NCCLFloat32 is ncclFloat32 (ncclFloat), the only element type this project moves.
const NCCLFloat32 NCCLType = 7

// NCCLOp is an ncclRedOp_t.
type NCCLOp int32

// Reduction operators.
const (
	NCCLSum NCCLOp = 0
	NCCLAvg NCCLOp = 4 // NCCL 2.10 and newer
)

// NCCLResult is an ncclResult_t. The zero value is success; other values are errors whose text
// is "NAME: description" from a built-in table.
type NCCLResult int32

// NCCL result codes.
const (
	NCCLSuccess            NCCLResult = 0
	NCCLUnhandledCUDAError NCCLResult = 1
	NCCLSystemError        NCCLResult = 2
	NCCLInternalError      NCCLResult = 3
	NCCLInvalidArgument    NCCLResult = 4
	NCCLInvalidUsage       NCCLResult = 5
	NCCLRemoteError        NCCLResult = 6
	NCCLInProgress         NCCLResult = 7
)

var ncclText = map[NCCLResult][2]string{
	NCCLSuccess:            {"ncclSuccess", "no error"},
	NCCLUnhandledCUDAError: {"ncclUnhandledCudaError", "a CUDA call inside NCCL failed"},
	NCCLSystemError:        {"ncclSystemError", "a system call failed (network, shared memory, ...)"},
	NCCLInternalError:      {"ncclInternalError", "internal NCCL error"},
	NCCLInvalidArgument:    {"ncclInvalidArgument", "invalid argument"},
	NCCLInvalidUsage:       {"ncclInvalidUsage", "invalid usage"},
	NCCLRemoteError:        {"ncclRemoteError", "a remote rank failed or disconnected"},
	NCCLInProgress:         {"ncclInProgress", "operation in progress"},
}

// Error returns "NAME: description".
func (r NCCLResult) Error() string {
	if t, ok := ncclText[r]; ok {
		return t[0] + ": " + t[1]
	}
	return "ncclResult(" + strconv.Itoa(int(r)) + "): unrecognised NCCL result"
}

// ncclPaths is where LoadNCCL looks when TORCHLEAN_NCCL is unset: the system's library search,
// then the nvidia-nccl wheel that PyTorch installs (site-packages/nvidia/nccl/lib) under the
// usual Python prefixes (a virtual environment or conda environment first).
func ncclPaths() []string {
	paths := []string{"libnccl.so.2", "libnccl.so"}
	var roots []string
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if v := os.Getenv(env); v != "" {
			roots = append(roots, filepath.Join(v, "lib"))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, filepath.Join(home, ".local", "lib"))
	}
	roots = append(roots, "/usr/local/lib", "/usr/lib", "/opt/conda/lib")
	for _, r := range roots {
		for _, sp := range []string{"site-packages", "dist-packages"} {
			hits, _ := filepath.Glob(filepath.Join(r, "python3*", sp, "nvidia", "nccl", "lib", "libnccl.so.2"))
			paths = append(paths, hits...)
		}
	}
	return paths
}

// LoadNCCL opens libnccl: $TORCHLEAN_NCCL when set (and then only that path), else the first of
// libnccl.so.2 and libnccl.so through the system's library search, then PyTorch's wheel copy
// (see ncclPaths), that loads. It needs no GPU. Errors wrap ErrNoLibrary (every path tried is
// named; always, in builds where Enabled is false) or ErrMissingSymbol.
func LoadNCCL() (*NCCL, error) {
	if p := os.Getenv("TORCHLEAN_NCCL"); p != "" {
		return LoadNCCLFrom(p)
	}
	return loadNCCL(ncclPaths())
}

// LoadNCCLFrom is LoadNCCL with an explicit library path (ignoring TORCHLEAN_NCCL).
func LoadNCCLFrom(path string) (*NCCL, error) { return loadNCCL([]string{path}) }

func loadNCCL(paths []string) (*NCCL, error) {
	lib, path, err := openFirst("libnccl (set TORCHLEAN_NCCL to its path)", paths)
	if err != nil {
		return nil, err
	}
	n := &NCCL{path: path, lib: lib}
	if err := resolve(lib, path, n.fn.symbols()); err != nil {
		return nil, err
	}
	for _, s := range n.fn.optional() {
		if p, err := lookupSymbol(lib, s.name); err == nil {
			*s.addr = p
		}
	}
	v := new(int32)
	if err := n.call("ncclGetVersion", n.fn.getVersion, uintptr(unsafe.Pointer(v))); err != nil {
		return nil, err
	}
	n.version = int(*v)
	return n, nil
}

// Path returns the library path that was opened.
func (n *NCCL) Path() string { return n.path }

// Version returns ncclGetVersion: 10000*major + 100*minor + patch for NCCL 2.9 and newer (e.g.
// 22105 for 2.21.5).
func (n *NCCL) Version() int { return n.version }

// HasSendRecv reports whether the library has ncclSend and ncclRecv (NCCL 2.7 and newer).
func (n *NCCL) HasSendRecv() bool { return n.fn.send != 0 && n.fn.recv != 0 }

//go:uintptrescapes
//go:noinline
func (n *NCCL) call(name string, fn uintptr, args ...uintptr) error {
	if r := NCCLResult(int32(sysCall(fn, args...))); r != NCCLSuccess {
		return &Error{Call: name, Err: r}
	}
	return nil
}

// ErrorString returns ncclGetErrorString(r), the library's own text.
func (n *NCCL) ErrorString(r NCCLResult) string {
	if n.fn.getErrorString == 0 {
		return r.Error()
	}
	return goString(sysCall(n.fn.getErrorString, uintptr(r)))
}

// UniqueID makes a new unique id (ncclGetUniqueId). It needs no Lock; the id names a rendezvous
// point (an address of this host and a port NCCL opened), so it is made on one rank and sent to
// the others.
func (n *NCCL) UniqueID() (NCCLUniqueID, error) {
	id := new(NCCLUniqueID)
	err := n.call("ncclGetUniqueId", n.fn.getUniqueID, uintptr(unsafe.Pointer(id)))
	return *id, err
}

// CommInitRank creates the communicator of rank (0 <= rank < nranks) of the group named by id,
// on the device whose primary context the caller holds (Lock). It blocks until all nranks ranks
// have called it.
//
// The calling convention: ncclCommInitRank takes the 128-byte ncclUniqueId by value, which the
// uintptr-only call path cannot express directly. Where the library has
// ncclCommInitRankScalable (NCCL 2.23 and newer), which takes an array of ids by pointer (with
// one id and a NULL config it is ncclCommInitRank: both call the same internal initialisation
// with one id and the default configuration), that is used. Otherwise the by-value argument is
// laid out by hand as the platform ABI passes it: on amd64 (System V) an aggregate larger than
// 16 bytes is of class MEMORY, copied into the outgoing stack argument area, while the integer
// arguments after it still take the next integer registers, so the call is made with (comm,
// nranks, rank) in the first three registers, three unused registers, and the id's 16 eightbytes
// as the first 16 stack slots (purego.SyscallN places argument 7 onwards on the stack in order);
// on arm64 (AAPCS64) an aggregate larger than 16 bytes is replaced by a pointer to a
// caller-made copy, passed in the next integer register: (comm, nranks, &copy, rank). The test
// TestNCCLCallingConvention checks both entry points against a C library compiled from the
// test, which verifies the id's bytes and the ranks it receives.
func (n *NCCL) CommInitRank(nranks int, id NCCLUniqueID, rank int) (Comm, error) {
	if nranks < 1 || rank < 0 || rank >= nranks || nranks > 1<<30 {
		return 0, &Error{Call: "ncclCommInitRank", Err: NCCLInvalidArgument,
			Detail: fmt.Sprintf("rank %d of %d", rank, nranks)}
	}
	comm := new(Comm)
	ids := new(NCCLUniqueID) // on the heap: the library reads it during the call
	*ids = id
	if n.fn.commInitRankScalable != 0 {
		err := n.call("ncclCommInitRankScalable", n.fn.commInitRankScalable,
			uintptr(unsafe.Pointer(comm)), uintptr(nranks), uintptr(rank), 1, uintptr(unsafe.Pointer(ids)), 0)
		return *comm, err
	}
	return n.commInitRankByValue(comm, nranks, ids, rank)
}

// commInitRankByValue calls ncclCommInitRank with the id passed by value (see CommInitRank).
func (n *NCCL) commInitRankByValue(comm *Comm, nranks int, id *NCCLUniqueID, rank int) (Comm, error) {
	switch runtime.GOARCH {
	case "amd64":
		var args [6 + NCCLUniqueIDBytes/8]uintptr
		args[0], args[1], args[2] = uintptr(unsafe.Pointer(comm)), uintptr(nranks), uintptr(rank)
		for i := range NCCLUniqueIDBytes / 8 {
			args[6+i] = uintptr(*(*uint64)(unsafe.Pointer(&id[8*i])))
		}
		err := n.callCommInit(args[:])
		runtime.KeepAlive(comm)
		return *comm, err
	case "arm64":
		err := n.call("ncclCommInitRank", n.fn.commInitRank,
			uintptr(unsafe.Pointer(comm)), uintptr(nranks), uintptr(unsafe.Pointer(id)), uintptr(rank))
		return *comm, err
	}
	return 0, &Error{Call: "ncclCommInitRank", Err: NCCLInvalidUsage, Detail: "no by-value calling convention for " + runtime.GOARCH}
}

// callCommInit issues ncclCommInitRank with an argument list whose only Go pointer (the comm
// out-parameter, args[0]) the caller keeps alive; the list is copied to the heap for the call.
func (n *NCCL) callCommInit(args []uintptr) error {
	heap := append([]uintptr(nil), args...)
	if r := NCCLResult(int32(sysCallSlice(n.fn.commInitRank, heap))); r != NCCLSuccess {
		return &Error{Call: "ncclCommInitRank", Err: r}
	}
	return nil
}

// CommInitAll creates one communicator per device of devs (CUDA ordinals) in this process
// (ncclCommInitAll): comms[i] is rank i, on devs[i]. It needs no Lock (NCCL sets each device
// itself), but the devices' primary contexts must exist (ops opens them first).
func (n *NCCL) CommInitAll(devs []int) ([]Comm, error) {
	if len(devs) == 0 {
		return nil, &Error{Call: "ncclCommInitAll", Err: NCCLInvalidArgument, Detail: "no devices"}
	}
	comms := make([]Comm, len(devs))
	list := make([]int32, len(devs))
	for i, d := range devs {
		list[i] = int32(d)
	}
	err := n.call("ncclCommInitAll", n.fn.commInitAll,
		uintptr(unsafe.Pointer(&comms[0])), uintptr(len(devs)), uintptr(unsafe.Pointer(&list[0])))
	return comms, err
}

// AllReduce queues ncclAllReduce of count float32s on s: recv = op over the ranks of send (recv
// may equal send). Requires Lock.
func (n *NCCL) AllReduce(send, recv DevicePtr, count int, op NCCLOp, c Comm, s Stream) error {
	return n.call("ncclAllReduce", n.fn.allReduce, uintptr(send), uintptr(recv), uintptr(count),
		uintptr(NCCLFloat32), uintptr(op), uintptr(c), uintptr(s))
}

// Broadcast queues ncclBroadcast of count float32s from root's send to every rank's recv.
// Requires Lock.
func (n *NCCL) Broadcast(send, recv DevicePtr, count, root int, c Comm, s Stream) error {
	return n.call("ncclBroadcast", n.fn.broadcast, uintptr(send), uintptr(recv), uintptr(count),
		uintptr(NCCLFloat32), uintptr(root), uintptr(c), uintptr(s))
}

// ReduceScatter queues ncclReduceScatter: rank r's recv (recvCount float32s) = op over the ranks
// of send[r*recvCount : (r+1)*recvCount]. Requires Lock.
func (n *NCCL) ReduceScatter(send, recv DevicePtr, recvCount int, op NCCLOp, c Comm, s Stream) error {
	return n.call("ncclReduceScatter", n.fn.reduceScatter, uintptr(send), uintptr(recv), uintptr(recvCount),
		uintptr(NCCLFloat32), uintptr(op), uintptr(c), uintptr(s))
}

// AllGather queues ncclAllGather: recv[r*sendCount : (r+1)*sendCount] = rank r's send on every
// rank. Requires Lock.
func (n *NCCL) AllGather(send, recv DevicePtr, sendCount int, c Comm, s Stream) error {
	return n.call("ncclAllGather", n.fn.allGather, uintptr(send), uintptr(recv), uintptr(sendCount),
		uintptr(NCCLFloat32), uintptr(c), uintptr(s))
}

// Send queues ncclSend of count float32s to peer (inside a group with the matching Recv).
// Requires Lock and HasSendRecv.
func (n *NCCL) Send(send DevicePtr, count, peer int, c Comm, s Stream) error {
	return n.call("ncclSend", n.fn.send, uintptr(send), uintptr(count), uintptr(NCCLFloat32),
		uintptr(peer), uintptr(c), uintptr(s))
}

// Recv queues ncclRecv of count float32s from peer. Requires Lock and HasSendRecv.
func (n *NCCL) Recv(recv DevicePtr, count, peer int, c Comm, s Stream) error {
	return n.call("ncclRecv", n.fn.recv, uintptr(recv), uintptr(count), uintptr(NCCLFloat32),
		uintptr(peer), uintptr(c), uintptr(s))
}

// GroupStart opens a group of NCCL calls (ncclGroupStart), issued together at GroupEnd.
func (n *NCCL) GroupStart() error { return n.call("ncclGroupStart", n.fn.groupStart) }

// GroupEnd closes a group (ncclGroupEnd).
func (n *NCCL) GroupEnd() error { return n.call("ncclGroupEnd", n.fn.groupEnd) }

// AsyncError returns the communicator's asynchronous error (ncclCommGetAsyncError): nil while
// healthy, an *Error wrapping NCCLRemoteError when a peer failed, and so on. It may be called
// from any goroutine while collectives run (the watchdog's poll).
func (n *NCCL) AsyncError(c Comm) error {
	r := new(NCCLResult)
	if err := n.call("ncclCommGetAsyncError", n.fn.commGetAsyncError, uintptr(c), uintptr(unsafe.Pointer(r))); err != nil {
		return err
	}
	if *r != NCCLSuccess && *r != NCCLInProgress {
		return &Error{Call: "ncclCommGetAsyncError", Err: *r}
	}
	return nil
}

// Abort frees the communicator, making its pending collectives return (ncclCommAbort): the way
// out of a collective whose peer died. It may be called from any goroutine.
func (n *NCCL) Abort(c Comm) error { return n.call("ncclCommAbort", n.fn.commAbort, uintptr(c)) }

// Destroy frees the communicator after its pending work (ncclCommDestroy). Requires Lock.
func (n *NCCL) Destroy(c Comm) error { return n.call("ncclCommDestroy", n.fn.commDestroy, uintptr(c)) }
