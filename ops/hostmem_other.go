//go:build !linux

package ops

// hostMemoryBytes returns 0 (unknown) where the memory limits are not queried.
func hostMemoryBytes() uint64 { return 0 }

// hostAvailable reports the available memory as unknown where it is not queried.
func hostAvailable() (avail uint64, known bool) { return 0, false }
