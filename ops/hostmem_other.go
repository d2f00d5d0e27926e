//go:build !linux

package ops

// hostMemoryBytes returns 0 (unknown) where the total RAM is not queried.
func hostMemoryBytes() uint64 { return 0 }
