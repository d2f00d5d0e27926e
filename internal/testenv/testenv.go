// Package testenv holds the test guards shared by the packages' tests.
package testenv

import (
	"math"
	"os"
	"testing"
)

// RequireCUDA skips the test with the reason when CUDA is not usable (ok false), except under
// TORCHLEAN_REQUIRE_CUDA=1 (every GPU-machine run sets it), where a missing GPU fails the test so
// that nothing skips silently there.
func RequireCUDA(t testing.TB, ok bool, reason string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("TORCHLEAN_REQUIRE_CUDA") == "1" {
		t.Fatalf("CUDA required (TORCHLEAN_REQUIRE_CUDA=1) but not usable: %s", reason)
	}
	t.Skipf("no CUDA: %s", reason)
}

// Wide returns v as an int, or math.MaxInt where int is too narrow to hold it (32-bit
// platforms), so that a test of sizes that overflow or exceed every allocation, written with
// 64-bit values, still passes such a size there.
func Wide(v uint64) int {
	if v > math.MaxInt {
		return math.MaxInt
	}
	return int(v)
}
