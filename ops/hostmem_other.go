//go:build !linux

package ops

// hostMemoryBytes returns 0 (unknown) where the memory limits are not queried.
func hostMemoryBytes() (uint64, string) { return 0, "" }

// hostAvailable reports the available memory as unknown where it is not queried.
func hostAvailable() (avail uint64, known bool) { return 0, false }

// addressSpace reports no address-space limit where it is not queried.
func addressSpace() (limit, used uint64, ok bool) { return 0, 0, false }
