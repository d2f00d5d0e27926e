//go:build 386 || arm || mips || mipsle

package ops

import "runtime/debug"

// A 32-bit test binary has 4 GiB of address space; the mirror tests' large cases, with the Go
// heap growing to twice its live size between collections, can approach it when the collector
// lags (a loaded machine). A soft limit of 2 GiB makes it collect first.
func init() { debug.SetMemoryLimit(2 << 30) }
