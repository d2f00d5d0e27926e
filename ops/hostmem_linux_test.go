package ops

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// TestAddressSpaceLimit: under an address-space limit (ulimit -v), a CPU allocation larger than
// the limit is ErrOutOfMemory, not a fatal runtime error, and a large buffer allocated and
// released again and again is not refused. The test runs itself in a child process with the
// limit set.
func TestAddressSpaceLimit(t *testing.T) {
	const limit = 4 << 30
	if os.Getenv("TORCHLEAN_TEST_RLIMIT_AS") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAddressSpaceLimit$", "-test.v")
		cmd.Env = append(os.Environ(), "TORCHLEAN_TEST_RLIMIT_AS=1", "TORCHLEAN_DEVICE=cpu")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Skip("cannot set RLIMIT_AS:", err)
	}
	if hostMemory() > limit {
		t.Fatalf("hostMemory %d ignores the address-space limit %d", hostMemory(), limit)
	}
	if _, err := Zeros(CPU(), limit/4+1); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("a buffer larger than the limit: %v, want ErrOutOfMemory", err)
	}
	// Released memory is reused: the same large buffer again and again fits (a check of what was
	// left of the address space once refused it).
	for i := range 4 {
		b, err := Zeros(CPU(), 3<<29/4) // 1.5 GiB, above the CPU cache's limit: never cached
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		b.Release()
		runtime.GC()
	}
}
