package main

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/autograd/dist"
	"github.com/torchlean-go/torchlean/internal/testenv"
	"github.com/torchlean-go/torchlean/ops"
)

// ddpTiny is tiny() cut to a few steps, data parallel.
func ddpTiny() options {
	o := tiny()
	o.Steps, o.EvalEvery, o.Sample, o.DDP, o.Ranks = 8, 4, 20, true, 2
	return o
}

// ddpGolden is the digest of the final parameters of ddpTiny on 2 ranks, computed on the CPU
// (in-process ranks, the exact all-reduce). A GPU run in exact and deterministic mode must give
// it too (TestDDPCUDAMatchesCPU).
const ddpGolden = "63edf7ee2c27a9f6b904907995482596"

// TestDDPTwoRanks trains the tiny model on 2 in-process CPU ranks: both end with the same
// parameters, run after run (the recorded digest); only rank 0 logs, evaluates, plots and
// samples; every buffer is released. The run follows the single-process run with batches twice
// as large over the same windows (the same mean gradient in exact arithmetic), to float32
// rounding: not bit for bit, since the ranks' sums are grouped differently.
func TestDDPTwoRanks(t *testing.T) {
	d := ops.CPU()
	base := d.Stats().LiveBytes
	o := ddpTiny()
	o.Plot = filepath.Join(t.TempDir(), "gpt.png")
	var log bytes.Buffer
	all, err := runLocal([]*ops.Device{d, d}, o, &log)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().LiveBytes; got != base {
		t.Errorf("live bytes %d after the run, %d before", got, base)
	}
	r0, r1 := all[0], all[1]
	if r0.digest != r1.digest {
		t.Errorf("the ranks' parameters differ: %s, %s", r0.digest, r1.digest)
	}
	if r0.digest != ddpGolden {
		t.Errorf("digest %s, recorded %s", r0.digest, ddpGolden)
	}
	if r0.steps != 8 || r1.steps != 8 || len(r0.curves.Val) != 2 || len(r1.curves.Val) != 0 || r1.sample != "" || r0.sample == "" {
		t.Errorf("rank 0: %d steps, validation %v, sample %q; rank 1: %d steps, validation %v, sample %q",
			r0.steps, r0.curves.Val, r0.sample, r1.steps, r1.curves.Val, r1.sample)
	}
	if _, err := os.Stat(o.Plot); err != nil {
		t.Errorf("plot: %v", err)
	}
	for _, want := range []string{"data parallel: 2 ranks", "step     8/8"} {
		if strings.Count(log.String(), want) != 1 {
			t.Errorf("the log should say %q once:\n%s", want, log.String())
		}
	}
	again, err := runLocal([]*ops.Device{d, d}, o, nil)
	if err != nil || again[0].digest != r0.digest {
		t.Errorf("second run: %v, digest %s, first %s", err, again[0].digest, r0.digest)
	}
	one := o
	one.DDP, one.Batch, one.Plot = false, 2*o.Batch, ""
	single, err := run(d, one, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range single.curves.Val {
		if diff := math.Abs(v - r0.curves.Val[i]); !(diff < 1e-5) {
			t.Errorf("evaluation %d: %v bits per character on 2 ranks, %v in one process with twice the batch", i, r0.curves.Val[i], v)
		}
	}
	t.Logf("validation: 2 ranks %v, one process %v", r0.curves.Val, single.curves.Val)
}

// TestDDPGraph: -graph with -ddp says once that graphs are not used, and the ranks train
// eagerly to the recorded digest.
func TestDDPGraph(t *testing.T) {
	o := ddpTiny()
	o.Plot, o.Graph = "", true
	var log bytes.Buffer
	all, err := runLocal([]*ops.Device{ops.CPU(), ops.CPU()}, o, &log)
	if err != nil {
		t.Fatal(err)
	}
	if all[0].digest != ddpGolden || all[1].digest != ddpGolden {
		t.Errorf("digests %s, %s; without -graph %s", all[0].digest, all[1].digest, ddpGolden)
	}
	if strings.Count(log.String(), "graph: not used with -ddp") != 1 {
		t.Errorf("the log should say once that graphs are not used:\n%s", log.String())
	}
}

// TestDDPGroup runs the 2 ranks as a torchrun-style group (dist.Init over TCP, here two
// goroutines of this process): the same parameters as the in-process ranks.
func TestDDPGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no TCP: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	o := ddpTiny()
	o.Plot = ""
	res := make([]*result, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := dist.Env{Rank: r, WorldSize: 2, LocalRank: r, MasterAddr: "127.0.0.1", MasterPort: port}
			res[r], errs[r] = runGroup(e, ops.CPU(), o, nil)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if res[0].digest != ddpGolden || res[1].digest != ddpGolden {
		t.Errorf("digests %s, %s; in-process ranks %s", res[0].digest, res[1].digest, ddpGolden)
	}
}

// TestDDPCUDAMatchesCPU trains ddpTiny on CUDA ranks in exact and deterministic mode (every
// CUDA device with NCCL when there are two or more; on one GPU, two ranks on it with the host
// all-reduce): the parameters must have the CPU ranks' bits.
func TestDDPCUDAMatchesCPU(t *testing.T) {
	gpu, err := ops.Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	old := ops.Deterministic()
	ops.SetDeterministic(true)
	defer ops.SetDeterministic(old)
	o := ddpTiny()
	o.Plot, o.Exact = "", true
	devs := dist.LocalDevices(1)
	ro := dist.RunOptions{Exact: true, Timeout: time.Minute}
	if len(devs) < 2 {
		devs, ro.HostOnly = []*ops.Device{gpu, gpu}, true
	} else {
		devs = devs[:2]
	}
	all := make([]*result, 2)
	err = dist.RunLocal(devs, ro, func(wk *dist.Worker) error {
		r, err := runRank(wk.Device, o, nil, wk)
		all[wk.Rank] = r
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if all[0].digest != ddpGolden || all[1].digest != ddpGolden {
		t.Errorf("%s: digests %s, %s; CPU %s", devs[0], all[0].digest, all[1].digest, ddpGolden)
	}
}
