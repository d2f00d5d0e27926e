package ops_test

import (
	"fmt"
	"sync"

	"github.com/torchlean-go/torchlean/ops"
)

// Two in-process ranks average their buffers: the exact all-reduce, (x0 + x1) / 2 element by
// element, on both ranks.
func ExampleComm_AllReduce() {
	g, _ := ops.NewLocalGroup(2, 0)
	out := make([][]float32, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _ := ops.NewHostComm(ops.CPU(), r, 2, g.Rank(r), ops.CommOptions{})
			x, _ := ops.FromFloat32(ops.CPU(), []float32{float32(r), 10 * float32(r+1)})
			defer x.Release()
			if err := c.AllReduce(ops.ReduceAvg, x); err != nil {
				fmt.Println(err)
				return
			}
			out[r], _ = x.Float32s()
		}()
	}
	wg.Wait()
	fmt.Println(out[0], out[1])
	// Output: [0.5 15] [0.5 15]
}
