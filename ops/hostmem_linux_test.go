package ops

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
)

// TestAddressSpaceLimit: under an address-space limit (ulimit -v), a CPU allocation larger than
// the limit, or than what is left of it, is ErrOutOfMemory, not a fatal runtime error, also when
// freed heap ranges look large enough. Each scenario runs in a child process of its own with the
// limit set 2.5 GiB above the child's address space at its start (which differs between
// machines: 1.5 GiB on a 2-core one, more with more cores and libraries).
func TestAddressSpaceLimit(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's runtime cannot start under an address-space limit")
	}
	scenario := os.Getenv("TORCHLEAN_TEST_RLIMIT_AS")
	if scenario == "" {
		for _, sc := range []string{"fit", "hole"} {
			cmd := exec.Command(os.Args[0], "-test.run=^TestAddressSpaceLimit$", "-test.v")
			cmd.Env = append(os.Environ(), "TORCHLEAN_TEST_RLIMIT_AS="+sc, "TORCHLEAN_DEVICE=cpu")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("child (%s): %v\n%s", sc, err, out)
			}
		}
		return
	}
	// Threads first: a purego build starts its OS threads through pthreads, each with a stack and,
	// once it calls malloc, a malloc arena, some 100 MiB of address space apiece on a 16-core
	// machine; the garbage collector starts one per P. Then the measure.
	for range 3 {
		debug.FreeOSMemory()
	}
	status, err := os.ReadFile("/proc/self/status")
	kb, ok := field(status, "VmSize:")
	if err != nil || !ok {
		t.Skip("no VmSize in /proc/self/status")
	}
	limit := kb<<10 + 2560<<20
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Skip("cannot set RLIMIT_AS:", err)
	}
	if m, what := hostMemory(); m > limit || !strings.Contains(what, "address space") {
		t.Fatalf("hostMemory %d (%s) ignores the address-space limit %d", m, what, limit)
	}
	avail, known := hostAvailable()
	t.Logf("%s: address space %s at the start, limit %s; memory available %s (known %v)", scenario,
		MiB(int64(kb<<10)), MiB(int64(limit)), MiB(int64(avail)), known)
	if known && avail < 4<<30 {
		t.Skipf("%s of memory available: it, not the address space, would bound these buffers", MiB(int64(avail)))
	}
	if _, err := Zeros(CPU(), int(limit/4+1)); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("a buffer larger than the limit: %v, want ErrOutOfMemory", err)
	}
	if scenario == "hole" {
		// 700 MiB freed between live buffers cannot hold 1300 MiB, which needs new address space
		// (before the guard counted what is left, and while it counted freed ranges, the child
		// died of a fatal error here).
		a, err := Zeros(CPU(), 700<<20/4)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Zeros(CPU(), 700<<20/4)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
		a.Release()
		runtime.GC()
		debug.FreeOSMemory()
		if c, err := Zeros(CPU(), 1300<<20/4); err == nil {
			c.Release()
		} else if !errors.Is(err, ErrOutOfMemory) {
			t.Errorf("1300 MiB past a 700 MiB hole: %v", err)
		}
		return
	}
	// Buffers that fit one by one but not together: the one past what is left is refused.
	var held []*Buffer
	for i := range 3 {
		b, err := Zeros(CPU(), 3<<29/4) // 1.5 GiB
		if err != nil {
			if !errors.Is(err, ErrOutOfMemory) || i == 0 {
				t.Fatalf("buffer %d of 1.5 GiB: %v, want ErrOutOfMemory from the second or third", i, err)
			}
			break
		}
		if i == 2 {
			t.Fatal("three buffers of 1.5 GiB in 2.5 GiB of address space")
		}
		held = append(held, b)
	}
	for _, b := range held {
		b.Release()
	}
	runtime.GC()
	// Released and asked for again and again, with small allocations in between (which may take
	// pieces of the freed range): served or refused, never a fatal error.
	for i := range 8 {
		b, err := Zeros(CPU(), 3<<29/4) // 1.5 GiB, above the CPU cache's limit: never cached
		if err != nil && !errors.Is(err, ErrOutOfMemory) {
			t.Fatalf("round %d: %v", i, err)
		}
		_ = fmt.Sprint(make([]byte, 1<<20+i)) // a fresh small span
		b.Release()
		runtime.GC()
	}
}

// TestCgroupLevels reads memory limits from fake cgroup trees: v2 with the process in a limited
// child of a limited parent, v2 namespaced (the process's cgroup at the mount root), and v1;
// the working set leaves out inactive file pages.
func TestCgroupLevels(t *testing.T) {
	write := func(dir, name, text string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir+"/"+name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v2 := t.TempDir()
	write(v2+"/job", "memory.max", "2000\n")
	write(v2+"/job", "memory.current", "500\n")
	write(v2+"/job", "memory.stat", "anon 100\nfile 400\ninactive_file 300\n")
	write(v2+"/job/step", "memory.max", "max\n")
	write(v2+"/job/step", "memory.current", "450\n")
	write(v2+"/job/step/task", "memory.max", "1000\n")
	write(v2+"/job/step/task", "memory.current", "900\n")
	write(v2+"/job/step/task", "memory.stat", "anon 200\ninactive_file 600\n")
	ns := t.TempDir()
	write(ns, "memory.max", "4096\n")
	write(ns, "memory.current", "1024\n")
	v1 := t.TempDir()
	write(v1+"/memory/slurm/job1", "memory.limit_in_bytes", "8192\n")
	write(v1+"/memory/slurm/job1", "memory.usage_in_bytes", "5000\n")
	write(v1+"/memory/slurm/job1", "memory.stat", "cache 3000\ntotal_inactive_file 2500\n")
	write(v1+"/memory", "memory.limit_in_bytes", "9223372036854771712\n") // no limit
	for _, c := range []struct {
		name, proc, mnt string
		want            []cgroupLevel
	}{
		{"v2 nested", "0::/job/step/task\n", v2, []cgroupLevel{{1000, 300}, {2000, 200}}},
		{"v2 namespaced", "0::/some/host/path\n", ns, []cgroupLevel{{4096, 1024}}},
		{"v1", "12:pids:/\n4:memory:/slurm/job1\n1:name=systemd:/\n", v1, []cgroupLevel{{8192, 2500}}},
		{"none", "0::/\n", t.TempDir(), nil},
	} {
		got := cgroupLevelsAt([]byte(c.proc), c.mnt)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
