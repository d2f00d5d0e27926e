package ops

import (
	"bytes"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// hostMemoryBytes returns the most memory the process can have, and which limit that is (for
// messages): the least of the machine's RAM, the memory limits of its cgroup and the cgroup's
// ancestors, and its address-space limit (addressSpaceLimit: RLIMIT_AS, 3 GiB for a 32-bit
// program); 0 if none is known.
func hostMemoryBytes() (limit uint64, what string) {
	take := func(v uint64, w string) {
		if l := least(limit, v); l != limit {
			limit, what = l, w
		}
	}
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		take(uint64(si.Totalram)*uint64(si.Unit), "of RAM")
	}
	for _, g := range cgroupLevels() {
		take(g.limit, "under its cgroup's memory limit")
	}
	take(addressSpaceLimit(), "of address space under its limit (ulimit -v; 3 GiB for a 32-bit program)")
	return limit, what
}

// hostAvailable returns the memory a new allocation can take now, and whether that is known:
// the least of the kernel's MemAvailable and, for the process's cgroup and each ancestor with a
// limit, the limit less its working set (usage less the inactive file pages, which the kernel
// reclaims before it kills anything). The address-space limit is addressSpace's.
func hostAvailable() (avail uint64, known bool) {
	take := func(v uint64) {
		if !known || v < avail {
			avail, known = v, true
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb, ok := field(b, "MemAvailable:"); ok {
			take(kb << 10)
		}
	}
	for _, g := range cgroupLevels() {
		take(g.limit - min(g.limit, g.used))
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

// cgroupLevel is the memory limit of one cgroup and its working set.
type cgroupLevel struct{ limit, used uint64 }

// cgroupLevels returns the process's memory cgroup and its ancestors that have a limit: cgroup
// v2 (memory.max, memory.current, memory.stat inactive_file) or v1 (memory.limit_in_bytes,
// memory.usage_in_bytes, memory.stat total_inactive_file), found through /proc/self/cgroup
// under /sys/fs/cgroup. In a container whose cgroup is mounted at the root of /sys/fs/cgroup
// the path from /proc/self/cgroup does not exist there; the root is then the process's cgroup.
func cgroupLevels() []cgroupLevel {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	return cgroupLevelsAt(b, "/sys/fs/cgroup")
}

// cgroupLevelsAt is cgroupLevels for the /proc/self/cgroup text b and the cgroup mount mnt.
func cgroupLevelsAt(b []byte, mnt string) []cgroupLevel {
	var v2, v1 string
	for _, line := range bytes.Split(b, []byte("\n")) {
		parts := bytes.SplitN(line, []byte(":"), 3)
		if len(parts) != 3 {
			continue
		}
		switch ctrl := string(parts[1]); {
		case string(parts[0]) == "0" && ctrl == "":
			v2 = string(parts[2])
		case strings.Contains(","+ctrl+",", ",memory,"): // "memory" or a list of controllers
			v1 = string(parts[2])
		}
	}
	type files struct{ root, max, cur, inactive string }
	var fs files
	var rel string
	switch {
	case v2 != "" && (exists(path.Join(mnt, "memory.max")) || exists(path.Join(mnt, v2, "memory.max"))):
		fs, rel = files{mnt, "memory.max", "memory.current", "inactive_file"}, v2
	case v1 != "" || exists(path.Join(mnt, "memory", "memory.limit_in_bytes")):
		fs, rel = files{path.Join(mnt, "memory"), "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"}, v1
	default:
		return nil
	}
	dir := path.Join(fs.root, path.Clean("/"+rel))
	if !exists(path.Join(dir, fs.max)) {
		dir = fs.root // namespaced: the root is the process's cgroup
	}
	var levels []cgroupLevel
	for {
		if limit := readUint(path.Join(dir, fs.max)); limit > 0 {
			used := readUint(path.Join(dir, fs.cur))
			if st, err := os.ReadFile(path.Join(dir, "memory.stat")); err == nil {
				if inactive, ok := field(append([]byte("\n"), st...), "\n"+fs.inactive+" "); ok {
					used -= min(used, inactive)
				}
			}
			levels = append(levels, cgroupLevel{limit, used})
		}
		if dir == fs.root || len(dir) <= len(fs.root) {
			return levels
		}
		dir = path.Dir(dir)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// readUint returns the number in the file at p, 0 if there is none or it means no limit ("max",
// or v1's value near 2^63).
func readUint(p string) uint64 {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil || v >= 1<<62 {
		return 0
	}
	return v
}

// addressSpace returns the address-space limit (addressSpaceLimit's) and the process's mapped
// address space (VmSize), in bytes; ok is false when there is no limit or the size is unknown.
func addressSpace() (limit, used uint64, ok bool) {
	if limit = addressSpaceLimit(); limit == 0 {
		return 0, 0, false
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, false
	}
	kb, ok := field(b, "VmSize:")
	return limit, kb << 10, ok
}

// addressSpaceLimit returns the process's address-space limit in bytes: the soft RLIMIT_AS, and
// 3 GiB for a 32-bit program (what a 32-bit kernel gives it; a 64-bit kernel gives 4); 0 when
// there is none.
func addressSpaceLimit() uint64 {
	var limit uint64
	if ^uintptr(0)>>32 == 0 {
		limit = 3 << 30
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur != ^uint64(0) {
		limit = least(limit, rl.Cur)
	}
	return limit
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
