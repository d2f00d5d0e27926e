package ops

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// hostMemoryBytes returns the most memory the process can have: the least of the machine's
// RAM, the memory limit of its cgroup and its address-space limit (RLIMIT_AS); 0 if none is
// known.
func hostMemoryBytes() uint64 {
	var limit uint64
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		limit = least(limit, uint64(si.Totalram)*uint64(si.Unit))
	}
	if cg, _ := cgroupMemory(); cg > 0 {
		limit = least(limit, cg)
	}
	if as := addressSpaceLimit(); as > 0 {
		limit = least(limit, as)
	}
	return limit
}

// hostAvailableBytes returns the memory a new allocation can take now, and whether that is
// known: the least of the kernel's MemAvailable, the cgroup's limit less its usage, and the
// address-space limit less the address space in use.
func hostAvailableBytes() (uint64, bool) {
	var avail uint64
	known := false
	take := func(v uint64) { avail, known = least(avail, v), true }
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb, ok := field(b, "MemAvailable:"); ok {
			take(kb << 10)
		}
	}
	if limit, used := cgroupMemory(); limit > 0 && used > 0 {
		take(limit - min(limit, used))
	}
	if as := addressSpaceLimit(); as > 0 {
		if b, err := os.ReadFile("/proc/self/statm"); err == nil {
			if f := bytes.Fields(b); len(f) > 0 {
				if pages, err := strconv.ParseUint(string(f[0]), 10, 64); err == nil {
					take(as - min(as, pages*uint64(os.Getpagesize())))
				}
			}
		}
	}
	return avail, known
}

// least returns the smaller of a and b, where 0 stands for "unknown" (larger than any value).
func least(a, b uint64) uint64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// cgroupMemory returns the memory limit of the process's cgroup and its usage (cgroup v2
// memory.max and memory.current, or v1 memory.limit_in_bytes and memory.usage_in_bytes, as
// mounted in containers); 0 where there is none or it is unknown.
func cgroupMemory() (limit, used uint64) {
	read := func(path string) uint64 {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0
		}
		v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64) // "max" gives 0
		if err != nil || v >= 1<<62 {                                   // v1's "no limit" is near 2^63
			return 0
		}
		return v
	}
	if limit = read("/sys/fs/cgroup/memory.max"); limit > 0 {
		return limit, read("/sys/fs/cgroup/memory.current")
	}
	if limit = read("/sys/fs/cgroup/memory/memory.limit_in_bytes"); limit > 0 {
		return limit, read("/sys/fs/cgroup/memory/memory.usage_in_bytes")
	}
	return 0, 0
}

// addressSpaceLimit returns the soft RLIMIT_AS in bytes, 0 when there is none.
func addressSpaceLimit() uint64 {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) != nil || rl.Cur == ^uint64(0) {
		return 0
	}
	return rl.Cur
}

// field returns the number after name in a /proc/meminfo-style text.
func field(b []byte, name string) (uint64, bool) {
	i := bytes.Index(b, []byte(name))
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+len(name):])
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(f[0]), 10, 64)
	return v, err == nil
}
