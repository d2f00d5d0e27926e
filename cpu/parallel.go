package cpu

import (
	"runtime"
	"sync"
)

// Parallel splits [0, n) into at most GOMAXPROCS contiguous ranges of at least grain elements and
// runs f on each, concurrently; it returns when all are done. Kernels are independent per index
// (or per chunk), so the split never changes a result. Ranges of 4096 or more start at multiples
// of 16, so that float32 arrays aligned at their start stay aligned for the ranges' vector
// stores (the non-temporal stores of large outputs need it). A panic in f is raised again on the
// caller's goroutine once every range has ended (one of them, if several ranges panic), so a
// deferred recover of the caller sees it.
func Parallel(n, grain int, f func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	parts := min(workers, n/max(grain, 1))
	if parts <= 1 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	step := (n + parts - 1) / parts
	if step >= 1<<12 {
		step = (step + 15) &^ 15 // ranges start 64 bytes apart from 0 (aligned vector stores)
	}
	var wg sync.WaitGroup
	var once sync.Once
	var panicked any
	run := func(lo, hi int) {
		defer func() {
			if r := recover(); r != nil {
				once.Do(func() { panicked = r })
			}
		}()
		f(lo, hi)
	}
	for lo := step; lo < n; lo += step {
		wg.Go(func() { run(lo, min(n, lo+step)) })
	}
	run(0, step)
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
