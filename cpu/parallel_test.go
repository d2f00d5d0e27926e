package cpu

import (
	"runtime"
	"strings"
	"testing"
)

// TestParallelPanic: a panic in any range, not only the one run on the caller's goroutine,
// reaches the caller's deferred recover, after every range has ended.
func TestParallelPanic(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one range only")
	}
	for _, bad := range []int{0, 1} { // the caller's range, a worker's
		var ended [2]bool
		func() {
			defer func() {
				p, ok := recover().(*RangePanic)
				if !ok || p.Value != "range failed" || p.Lo != bad || !strings.Contains(string(p.Stack), "TestParallelPanic") {
					t.Errorf("range %d: recovered %+v", bad, p)
				}
			}()
			Parallel(2, 1, func(lo, hi int) {
				defer func() { ended[lo] = true }()
				if lo == bad {
					panic("range failed")
				}
			})
			t.Errorf("range %d: Parallel returned", bad)
		}()
		if !ended[0] || !ended[1] {
			t.Errorf("range %d: ranges ended %v, want both", bad, ended)
		}
	}
}
