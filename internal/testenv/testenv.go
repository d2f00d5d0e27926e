// Package testenv holds the test guards shared by the packages' tests.
package testenv

import (
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
