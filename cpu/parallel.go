package cpu

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// Parallel splits [0, n) into at most GOMAXPROCS contiguous ranges of at least grain elements and
// runs f on each, concurrently; it returns when all are done. Kernels are independent per index
// (or per chunk), so the split never changes a result. Ranges of 4096 or more start at multiples
// of 16, so that float32 arrays aligned at their start stay aligned for the ranges' vector
// stores (the non-temporal stores of large outputs need it). A panic in f is raised again on the
// caller's goroutine once every range has ended (one of them, if several ranges panic), as a
// *RangePanic holding the value and the stack of the goroutine that panicked, so that a deferred
// recover of the caller sees it and the trace shows where it happened.
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
				once.Do(func() { panicked = &RangePanic{Value: r, Lo: lo, Hi: hi, Stack: debug.Stack()} })
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

// RangePanic is the panic Parallel raises on its caller's goroutine when f panicked on the range
// [Lo, Hi): Value is what f panicked with, Stack the stack of the goroutine that ran the range.
type RangePanic struct {
	Value  any
	Lo, Hi int
	Stack  []byte
}

// Error reports the value, the range and the stack.
func (p *RangePanic) Error() string {
	return fmt.Sprintf("cpu: panic in range [%d, %d): %v\n\n%s", p.Lo, p.Hi, p.Value, p.Stack)
}

// Unwrap returns the value when it is an error (errors.Is and errors.As see through).
func (p *RangePanic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}
