package driver

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

func TestLoadNCCLMissing(t *testing.T) {
	t.Setenv("TORCHLEAN_NCCL", "/nonexistent/libnccl.so.2")
	n, err := LoadNCCL()
	if n != nil || !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("LoadNCCL with TORCHLEAN_NCCL missing = %v, %v; want ErrNoLibrary", n, err)
	}
	if !strings.HasPrefix(err.Error(), "driver: ") {
		t.Errorf("error lacks the package prefix: %v", err)
	}
	if Enabled && (!strings.Contains(err.Error(), "/nonexistent/libnccl.so.2") || !strings.Contains(err.Error(), "TORCHLEAN_NCCL")) {
		t.Errorf("error does not name the path and the variable: %v", err)
	}
	if n, err := LoadNCCLFrom("libc.so.6"); Enabled && err == nil || n != nil {
		t.Errorf("LoadNCCLFrom(libc) = %v, %v", n, err)
	} else if Enabled && !errors.Is(err, ErrNoLibrary) && !errors.Is(err, ErrMissingSymbol) {
		t.Errorf("LoadNCCLFrom(libc) = %v; want ErrMissingSymbol", err)
	}
}

// TestNCCLUniqueIDLayout: the id is NCCL_UNIQUE_ID_BYTES bytes with byte alignment (a C struct
// of one char array), so that its by-value layout is its bytes in order.
func TestNCCLUniqueIDLayout(t *testing.T) {
	var id NCCLUniqueID
	if unsafe.Sizeof(id) != 128 || unsafe.Alignof(id) != 1 || NCCLUniqueIDBytes != 128 {
		t.Fatalf("ncclUniqueId: size %d align %d", unsafe.Sizeof(id), unsafe.Alignof(id))
	}
}

func TestNCCLResultText(t *testing.T) {
	err := error(&Error{Call: "ncclAllReduce", Err: NCCLRemoteError})
	if got := err.Error(); got != "driver: ncclAllReduce: ncclRemoteError: a remote rank failed or disconnected" {
		t.Errorf("text %q", got)
	}
	if !errors.Is(err, NCCLRemoteError) || errors.Is(err, NCCLSystemError) {
		t.Error("errors.Is does not see the result")
	}
	if got := NCCLResult(42).Error(); !strings.Contains(got, "42") {
		t.Errorf("unknown code text %q", got)
	}
}

// fakeNCCL is a C stand-in for libnccl: it records its arguments and checks the unique id it
// receives against the pattern its ncclGetUniqueId writes, so the by-value calling convention
// of ncclCommInitRank and the pointer one of ncclCommInitRankScalable are checked for real.
const fakeNCCL = `
#include <stddef.h>
#include <string.h>
#include <stdint.h>
typedef struct { char internal[128]; } ncclUniqueId;
typedef void *ncclComm_t;
static uintptr_t last[8];
static int entry;
uintptr_t fake_last(int i) { return last[i]; }
int fake_entry(void) { return entry; }
int ncclGetVersion(int *v) { *v = VERSION; return 0; }
int ncclGetUniqueId(ncclUniqueId *id) { for (int i = 0; i < 128; i++) id->internal[i] = (char)(i * 7 + 3); return 0; }
static uintptr_t encode(const ncclUniqueId *id, int nranks, int rank) {
	uintptr_t s = 0;
	for (int i = 0; i < 128; i++) s += (uintptr_t)(unsigned char)id->internal[i] * (uintptr_t)(i + 1);
	return (s << 20) | ((uintptr_t)nranks << 10) | (uintptr_t)rank;
}
int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
	entry = 1; *comm = (ncclComm_t)encode(&id, nranks, rank); return 0;
}
#ifdef SCALABLE
int ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId, ncclUniqueId *ids, void *config) {
	if (nId != 1 || config != NULL) return 4;
	entry = 2; *comm = (ncclComm_t)encode(ids, nranks, rank); return 0;
}
#endif
int ncclCommInitAll(ncclComm_t *comms, int n, const int *devs) {
	for (int i = 0; i < n; i++) comms[i] = (ncclComm_t)(uintptr_t)(100 + devs[i]); return 0;
}
static int rec(uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d, uintptr_t e, uintptr_t f, uintptr_t g) {
	last[0] = a; last[1] = b; last[2] = c; last[3] = d; last[4] = e; last[5] = f; last[6] = g; return 0;
}
int ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, void *st) { return rec(1, (uintptr_t)s, (uintptr_t)r, n, t, op, (uintptr_t)c) || (last[7] = (uintptr_t)st, 0); }
int ncclBroadcast(const void *s, void *r, size_t n, int t, int root, ncclComm_t c, void *st) { return rec(2, (uintptr_t)s, (uintptr_t)r, n, t, root, (uintptr_t)c) || (last[7] = (uintptr_t)st, 0); }
int ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, void *st) { return rec(3, (uintptr_t)s, (uintptr_t)r, n, t, op, (uintptr_t)c) || (last[7] = (uintptr_t)st, 0); }
int ncclAllGather(const void *s, void *r, size_t n, int t, ncclComm_t c, void *st) { return rec(4, (uintptr_t)s, (uintptr_t)r, n, t, (uintptr_t)c, (uintptr_t)st); }
int ncclGroupStart(void) { return 0; }
int ncclGroupEnd(void) { return 0; }
int ncclCommGetAsyncError(ncclComm_t c, int *r) { *r = (uintptr_t)c == 666 ? 6 : 0; return 0; }
int ncclCommAbort(ncclComm_t c) { return (uintptr_t)c == 0 ? 4 : 0; }
int ncclCommDestroy(ncclComm_t c) { return 0; }
const char *ncclGetErrorString(int r) { return r == 6 ? "remote process exited or there was a network error" : "other"; }
`

// buildFakeNCCL compiles fakeNCCL into a shared library, skipping without a C compiler.
func buildFakeNCCL(t *testing.T, scalable bool) string {
	t.Helper()
	if !Enabled {
		t.Skip("this build has no loader")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build the fake libnccl")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "fake.c")
	if err := os.WriteFile(src, []byte(fakeNCCL), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "libnccl.so.2")
	args := []string{"-shared", "-fPIC", "-O1", "-o", out, src, "-DVERSION=22105"}
	if scalable {
		args = []string{"-shared", "-fPIC", "-O1", "-o", out, src, "-DVERSION=22304", "-DSCALABLE"}
	}
	if msg, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Skipf("cannot build the fake libnccl: %v\n%s", err, msg)
	}
	return out
}

func TestNCCLCallingConvention(t *testing.T) {
	for _, scalable := range []bool{false, true} {
		path := buildFakeNCCL(t, scalable)
		t.Setenv("TORCHLEAN_NCCL", path)
		n, err := LoadNCCL()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n.fn.commInitRankScalable != 0, scalable; got != want {
			t.Fatalf("scalable entry point found %v, want %v", got, want)
		}
		id, err := n.UniqueID()
		if err != nil {
			t.Fatal(err)
		}
		var sum uintptr
		for i, b := range id {
			if b != byte(i*7+3) {
				t.Fatalf("id byte %d = %d", i, b)
			}
			sum += uintptr(b) * uintptr(i+1)
		}
		for _, c := range [][2]int{{2, 0}, {2, 1}, {3, 2}, {1000, 999}} {
			comm, err := n.CommInitRank(c[0], id, c[1])
			if err != nil {
				t.Fatal(err)
			}
			if want := Comm(sum<<20 | uintptr(c[0])<<10 | uintptr(c[1])); comm != want {
				t.Errorf("scalable=%v: CommInitRank(%d, id, %d) = %#x, want %#x (id or ranks garbled)", scalable, c[0], c[1], comm, want)
			}
		}
		entry, _ := lookupSymbol(n.lib, "fake_entry")
		if got, want := int32(sysCall(entry)), map[bool]int32{false: 1, true: 2}[scalable]; got != want {
			t.Errorf("entry point %d, want %d", got, want)
		}
		// A changed id byte changes the comm: the bytes really travel.
		id2 := id
		id2[127]++
		if c2, _ := n.CommInitRank(2, id2, 1); c2 == Comm(sum<<20|2<<10|1) {
			t.Error("the last id byte did not reach the library")
		}
		if _, err := n.CommInitRank(2, id, 2); err == nil {
			t.Error("rank 2 of 2 accepted")
		}
		comms, err := n.CommInitAll([]int{3, 5})
		if err != nil || len(comms) != 2 || comms[0] != 103 || comms[1] != 105 {
			t.Errorf("CommInitAll = %v, %v", comms, err)
		}
		last, _ := lookupSymbol(n.lib, "fake_last")
		args := func() (a [8]uintptr) {
			for i := range a {
				a[i] = sysCall(last, uintptr(i))
			}
			return
		}
		check := func(name string, want [8]uintptr) {
			t.Helper()
			if got := args(); got != want {
				t.Errorf("%s: the library got %v, want %v", name, got, want)
			}
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(n.AllReduce(0x1000, 0x2000, 77, NCCLAvg, 9, 0x51))
		check("AllReduce", [8]uintptr{1, 0x1000, 0x2000, 77, 7, 4, 9, 0x51})
		must(n.Broadcast(0x1000, 0x2000, 78, 1, 9, 0x51))
		check("Broadcast", [8]uintptr{2, 0x1000, 0x2000, 78, 7, 1, 9, 0x51})
		must(n.ReduceScatter(0x1000, 0x2000, 79, NCCLSum, 9, 0x51))
		check("ReduceScatter", [8]uintptr{3, 0x1000, 0x2000, 79, 7, 0, 9, 0x51})
		must(n.AllGather(0x1000, 0x2000, 80, 9, 0x52))
		if a := args(); a[0] != 4 || a[3] != 80 || a[4] != 7 || a[5] != 9 || a[6] != 0x52 {
			t.Errorf("AllGather: %v", a)
		}
		must(n.GroupStart())
		must(n.GroupEnd())
		must(n.AsyncError(9))
		if err := n.AsyncError(666); !errors.Is(err, NCCLRemoteError) {
			t.Errorf("AsyncError(666) = %v", err)
		}
		if err := n.Abort(0); !errors.Is(err, NCCLInvalidArgument) {
			t.Errorf("Abort(0) = %v", err)
		}
		if s := n.ErrorString(NCCLRemoteError); !strings.Contains(s, "remote process") {
			t.Errorf("ErrorString = %q", s)
		}
		if n.HasSendRecv() {
			t.Error("the fake has no ncclSend")
		}
	}
}
