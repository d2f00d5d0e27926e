package ops

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestAddressSpaceLimit: under an address-space limit (ulimit -v), CPU allocations that cannot
// fit are ErrOutOfMemory, not a fatal runtime error: one larger than the limit, and one that
// fits the limit but not what is left of it. The test runs itself in a child process with the
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
	avail, ok := hostAvailableBytes()
	if !ok || avail >= limit {
		t.Fatalf("available %d (known %v) under a limit of %d", avail, ok, limit)
	}
	a, err := Zeros(CPU(), int(avail/2/4)) // fits
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	if _, err := Zeros(CPU(), int(avail*3/4/4)); !errors.Is(err, ErrOutOfMemory) { // no longer fits
		t.Errorf("a buffer larger than what is left: %v, want ErrOutOfMemory", err)
	}
}
