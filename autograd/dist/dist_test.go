package dist

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// mlpData is 96 examples of 8 features in 3 classes, a function of the index only.
func mlpData(t testing.TB) *nn.TensorSource {
	const n, f = 96, 8
	x := make([]float32, n*f)
	y := make([]int, n)
	for i := range n {
		best, arg := math.Inf(-1), 0
		for c := range 3 {
			var s float64
			for j := range f {
				v := math.Sin(float64(i*f+j)*0.37 + 0.1)
				x[i*f+j] = float32(v)
				s += v * math.Cos(float64(c*f+j))
			}
			if s > best {
				best, arg = s, c
			}
		}
		y[i] = arg
	}
	src, err := nn.NewTensorSource(nn.Layout{Features: []int{f}, Labels: []int{}}, x, nil, y)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// trainMLP trains the test MLP (8-16-3, ReLU, cross-entropy, SGD with momentum) on w's shard of
// 3 epochs of src with batch examples per rank, each rank starting from its own random
// parameters (the broadcast makes them rank 0's), and returns the final parameters.
func trainMLP(w *Worker, src nn.Source, batch int) ([][]float32, error) {
	return trainMLPWith(w, src, batch, Options{BucketBytes: 200}) // several buckets
}

// trainMLPWith is trainMLP with the DDP options o.
func trainMLPWith(w *Worker, src nn.Source, batch int, o Options) ([][]float32, error) {
	s := autograd.NewSession(autograd.Options{Device: w.Device, Seed: uint64(100 + w.Rank)})
	defer s.Close()
	w1 := s.ParamUniform("fc1.weight", []int{16, 8}, -0.35, 0.35)
	b1 := s.ParamUniform("fc1.bias", []int{16}, -0.35, 0.35)
	w2 := s.ParamUniform("fc2.weight", []int{3, 16}, -0.25, 0.25)
	b2 := s.ParamUniform("fc2.bias", []int{3}, -0.25, 0.25)
	ddp, err := New(s, w.Comm, o)
	if err != nil {
		return nil, err
	}
	opt := autograd.NewSGD(s.Params(), autograd.SGDOptions{LR: 0.1, Momentum: 0.9})
	for epoch := range 3 {
		shard, err := NewShard(src, true, 7, epoch, w.Rank, w.WorldSize)
		if err != nil {
			return nil, err
		}
		l, err := nn.NewLoader(shard, nn.LoaderOptions{BatchSize: batch, Device: w.Device, DropLast: true})
		if err != nil {
			return nil, err
		}
		for b := range l.Epoch(epoch) {
			s.Reset()
			x := s.Const(b.X, b.XShape)
			h := s.Relu(s.Linear(x, s.Use(w1), s.Use(b1)))
			loss := s.CrossEntropy(s.Linear(h, s.Use(w2), s.Use(b2)), b.Labels)
			if err := ddp.Backward(loss); err != nil {
				return nil, err
			}
			if err := opt.Step(); err != nil {
				return nil, err
			}
			opt.ZeroGrad()
		}
		if err := l.Err(); err != nil {
			return nil, err
		}
	}
	var out [][]float32
	for _, p := range s.Params() {
		v, err := p.Host()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, s.Err()
}

func paramHash(ps [][]float32) string {
	h := sha256.New()
	for _, p := range ps {
		for _, v := range p {
			binary.Write(h, binary.LittleEndian, math.Float32bits(v))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// trainLocal trains on ranks in-process CPU ranks and checks that every rank ends with the same
// bits; it returns rank 0's parameters.
func trainLocal(t *testing.T, ranks, batch int) [][]float32 {
	t.Helper()
	return trainLocalWith(t, ranks, batch, func(int) Options { return Options{BucketBytes: 200} })
}

// trainLocalWith is trainLocal with rank r's DDP options opts(r).
func trainLocalWith(t *testing.T, ranks, batch int, opts func(r int) Options) [][]float32 {
	t.Helper()
	src := mlpData(t)
	res := make([][][]float32, ranks)
	devs := make([]*ops.Device, ranks)
	for i := range devs {
		devs[i] = ops.CPU()
	}
	err := RunLocal(devs, RunOptions{Timeout: time.Minute}, func(w *Worker) error {
		var err error
		res[w.Rank], err = trainMLPWith(w, src, batch, opts(w.Rank))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := 1; r < ranks; r++ {
		if paramHash(res[r]) != paramHash(res[0]) {
			t.Fatalf("%d ranks: rank %d's parameters differ from rank 0's", ranks, r)
		}
	}
	return res[0]
}

const goldenPath = "testdata/ddp-golden.txt"

func readGolden(t *testing.T) map[string]string {
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		if os.Getenv("TORCHLEAN_WRITE_GOLDEN") != "" {
			return map[string]string{}
		}
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(line, "#") {
			m[f[0]] = f[1]
		}
	}
	return m
}

// TestDDPGolden: 2 and 3 in-process CPU ranks training the MLP on sharded data end with the same
// bits on every rank, run after run, equal to the hashes in testdata (which a GPU run in exact
// mode must reproduce). TORCHLEAN_WRITE_GOLDEN=1 rewrites the file.
func TestDDPGolden(t *testing.T) {
	golden := readGolden(t)
	got := map[string]string{}
	for _, ranks := range []int{2, 3} {
		a, b := trainLocal(t, ranks, 4), trainLocal(t, ranks, 4)
		ha, hb := paramHash(a), paramHash(b)
		if ha != hb {
			t.Errorf("%d ranks: run to run %s != %s", ranks, ha, hb)
		}
		key := "mlp/ranks=" + strconv.Itoa(ranks)
		got[key] = ha
		if os.Getenv("TORCHLEAN_WRITE_GOLDEN") == "" && golden[key] != ha {
			t.Errorf("%s: hash %s, golden %s", key, ha, golden[key])
		}
	}
	// The all-reduces after the backward pass (NoOverlap), or overlapping it on one rank only,
	// sum the same values: the same bits.
	for name, opts := range map[string]func(int) Options{
		"no overlap": func(int) Options { return Options{BucketBytes: 200, NoOverlap: true} },
		"mixed":      func(r int) Options { return Options{BucketBytes: 200, NoOverlap: r == 1} },
		"one bucket": func(int) Options { return Options{} },
	} {
		if h := paramHash(trainLocalWith(t, 2, 4, opts)); h != got["mlp/ranks=2"] {
			t.Errorf("2 ranks, %s: hash %s, with overlap %s", name, h, got["mlp/ranks=2"])
		}
	}
	if os.Getenv("TORCHLEAN_WRITE_GOLDEN") != "" {
		var b strings.Builder
		b.WriteString("# dist: SHA-256 (first 16 bytes) of the final parameters of TestDDPGolden's MLP, computed on the CPU\n")
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range got {
				if !yield(k) {
					return
				}
			}
		}) {
			fmt.Fprintf(&b, "%s %s\n", k, got[k])
		}
		if err := os.WriteFile(goldenPath, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDDPMatchesSingleProcess: 2 ranks with batches of 4 follow the single-process run with
// batches of 8 over the same order (the mean loss's gradient is the average of the shards'):
// equal up to float32 rounding of the differently grouped sums.
func TestDDPMatchesSingleProcess(t *testing.T) {
	two := trainLocal(t, 2, 4)
	one := trainLocal(t, 1, 8)
	var worst float64
	for i := range one {
		for j := range one[i] {
			d := math.Abs(float64(one[i][j] - two[i][j]))
			worst = max(worst, d/max(1e-2, math.Abs(float64(one[i][j]))))
		}
	}
	if worst > 1e-4 {
		t.Errorf("2 ranks vs one process: relative difference %g", worst)
	}
	t.Logf("2 ranks vs one process: worst relative difference %g", worst)
}

func TestDDPShapeMismatch(t *testing.T) {
	devs := []*ops.Device{ops.CPU(), ops.CPU(), ops.CPU()}
	err := RunLocal(devs, RunOptions{Timeout: time.Minute}, func(w *Worker) error {
		s := autograd.NewSession(autograd.Options{Device: w.Device})
		defer s.Close()
		s.ParamUniform("fc1.weight", []int{4, 3}, -1, 1)
		s.ParamUniform("fc2.weight", []int{2, 4 + w.Rank/2}, -1, 1)
		_, err := New(s, w.Comm, Options{})
		return err
	})
	if err == nil {
		t.Fatal("mismatched shapes accepted")
	}
	var re *RankError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), `parameter 1 ("fc2.weight") has shape [2 4] on one and [2 5] on the other`) ||
		!strings.Contains(err.Error(), "rank 0 and rank 2") {
		t.Errorf("error: %v", err)
	}
	for r := range 3 {
		if !strings.Contains(err.Error(), fmt.Sprintf("dist: rank %d:", r)) {
			t.Errorf("rank %d did not fail: %v", r, err)
		}
	}
}

// TestDDPRankFails: a rank that fails mid-training (or panics) ends the others with an error at
// their next collective, not a hang.
func TestDDPRankFails(t *testing.T) {
	src := mlpData(t)
	devs := []*ops.Device{ops.CPU(), ops.CPU()}
	start := time.Now()
	err := RunLocal(devs, RunOptions{Timeout: time.Minute}, func(w *Worker) error {
		if w.Rank == 1 {
			panic("rank 1 exploded")
		}
		_, err := trainMLP(w, src, 4)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "rank 1 exploded") || !errors.Is(err, ops.ErrAborted) {
		t.Errorf("error: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestShardOrder(t *testing.T) {
	order := []int{9, 8, 7, 6, 5, 4, 3}
	for r, want := range [][]int{{9, 6}, {8, 5}, {7, 4}} {
		got, err := ShardOrder(order, r, 3)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("rank %d: %v, %v", r, got, err)
		}
	}
	if _, err := ShardOrder(order, 3, 3); err == nil {
		t.Error("rank 3 of 3 accepted")
	}
	src := mlpData(t)
	a, _ := NewShard(src, true, 1, 0, 0, 2)
	b, _ := NewShard(src, true, 1, 1, 0, 2)
	c, _ := NewShard(src, true, 1, 0, 1, 2)
	seen := map[int]bool{}
	for i := range a.Len() {
		seen[a.Index(i)], seen[c.Index(i)] = true, true
	}
	if a.Len() != 48 || len(seen) != 96 {
		t.Errorf("shards of 96 over 2 ranks: %d each, %d distinct", a.Len(), len(seen))
	}
	same := 0
	for i := range a.Len() {
		if a.Index(i) == b.Index(i) {
			same++
		}
	}
	if same > 10 {
		t.Errorf("epochs 0 and 1 share %d of 48 positions: not reshuffled", same)
	}
}

func TestEnv(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	e, ok, err := envFrom(env("RANK", "2", "WORLD_SIZE", "4", "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "1234"))
	if !ok || err != nil || e != (Env{Rank: 2, WorldSize: 4, LocalRank: 2, MasterAddr: "10.0.0.1", MasterPort: 1234}) {
		t.Errorf("%+v %v %v", e, ok, err)
	}
	if _, ok, _ := envFrom(env()); ok {
		t.Error("no variables: ok")
	}
	for _, c := range []struct {
		kv   []string
		want string
	}{
		{[]string{"RANK", "0"}, "WORLD_SIZE is not set"},
		{[]string{"RANK", "x", "WORLD_SIZE", "2"}, `RANK="x" is not an integer`},
		{[]string{"RANK", "2", "WORLD_SIZE", "2"}, "RANK=2 outside"},
		{[]string{"RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", "70000"}, "MASTER_PORT=70000"},
	} {
		if _, _, err := envFrom(env(c.kv...)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.kv, err, c.want)
		}
	}
}

// TestRendezvousBadAddress: an unresolvable MASTER_ADDR fails at once naming it; an address
// where nothing listens fails after the timeout.
func TestRendezvousBadAddress(t *testing.T) {
	// Where no resolver answers (a machine without DNS), a lookup fails with a temporary error,
	// not "no such host", and the rendezvous rightly keeps trying: the at-once case needs a resolver.
	var dnsErr *net.DNSError
	if _, err := net.LookupHost("no-such-host.invalid"); errors.As(err, &dnsErr) && !dnsErr.IsNotFound {
		t.Logf("unresolvable: skipped, this machine's resolver does not answer (%v)", err)
	} else {
		start := time.Now()
		_, _, err := Rendezvous(Env{Rank: 1, WorldSize: 2, MasterAddr: "no-such-host.invalid", MasterPort: 29500}, 'h', nil, 30*time.Second)
		if err == nil || !strings.Contains(err.Error(), `MASTER_ADDR="no-such-host.invalid"`) {
			t.Errorf("unresolvable: %v", err)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("unresolvable took %v", d)
		}
	}
	port := freePort(t)
	start := time.Now()
	_, _, err := Rendezvous(Env{Rank: 1, WorldSize: 2, MasterAddr: "127.0.0.1", MasterPort: port}, 'h', nil, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "found no rank 0") || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Errorf("nothing listening: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("nothing listening took %v", d)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no TCP: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// The child processes of the two-process tests: the test binary itself, run with
// TORCHLEAN_DIST_CHILD set to what the child does, as rank 1 of 2.
func TestMain(m *testing.M) {
	if mode := os.Getenv("TORCHLEAN_DIST_CHILD"); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

func child(mode string) int {
	e, _, err := EnvFromOS()
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	switch mode {
	case "train": // the 2-rank MLP over TCP: print the parameters' hash
		w, err := Init(e, ops.CPU(), RunOptions{Timeout: 30 * time.Second})
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		defer w.Close()
		ps, err := trainMLP(w, mlpData(nil), 4)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("hash", paramHash(ps))
		return 0
	case "id", "hang":
		g, id, err := Rendezvous(e, 'h', nil, 30*time.Second)
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("id", hex.EncodeToString(id))
		all, err := g.AllGather([]float32{float32(e.Rank)})
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("gathered", all[0][0], all[1][0])
		if mode == "hang" {
			time.Sleep(time.Minute) // killed by the parent, or hanging past its timeout
		}
		return 0
	}
	return 2
}

// startChild runs the test binary as rank 1 of 2 of a group at port.
func startChild(t *testing.T, mode string, port int) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "TORCHLEAN_DIST_CHILD="+mode, "RANK=1", "WORLD_SIZE=2",
		"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

// TestRendezvousTwoProcesses: rank 0 (this process) hands a 128-byte id (the size of an NCCL
// unique id) to rank 1 (a child process) through the rendezvous, and both gather over it.
func TestRendezvousTwoProcesses(t *testing.T) {
	port := freePort(t)
	_, out := startChild(t, "id", port)
	id := make([]byte, 128)
	for i := range id {
		id[i] = byte(i*31 + 5)
	}
	g, got, err := Rendezvous(Env{Rank: 0, WorldSize: 2, MasterAddr: "127.0.0.1", MasterPort: port}, 'h', id, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !slices.Equal(got, id) {
		t.Error("rank 0 did not get its payload back")
	}
	all, err := g.AllGather([]float32{0})
	if err != nil || all[1][0] != 1 {
		t.Fatalf("gather: %v %v", all, err)
	}
	want := []string{"id " + hex.EncodeToString(id), "gathered 0 1"}
	for _, w := range want {
		if !out.Scan() || out.Text() != w {
			t.Errorf("child said %q, want %q", out.Text(), w)
		}
	}
}

// TestRankKilled: a rank killed after the rendezvous makes rank 0's next exchange fail at once
// (its connection closes), and a rank that hangs makes it fail after the timeout.
func TestRankKilled(t *testing.T) {
	for _, kill := range []bool{true, false} {
		port := freePort(t)
		cmd, out := startChild(t, "hang", port)
		const timeout = 2 * time.Second
		g, _, err := Rendezvous(Env{Rank: 0, WorldSize: 2, MasterAddr: "127.0.0.1", MasterPort: port}, 'h', nil, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		g.timeout = timeout
		if _, err := g.AllGather([]float32{0}); err != nil {
			t.Fatal(err)
		}
		out.Scan()
		out.Scan() // "gathered": the child now sleeps
		if kill {
			cmd.Process.Kill()
			cmd.Wait()
		}
		start := time.Now()
		_, err = g.AllGather([]float32{0})
		d := time.Since(start)
		want := "connection closed"
		if !kill {
			want = "the rank hangs"
		}
		if err == nil || !errors.Is(err, ops.ErrAborted) || !strings.Contains(err.Error(), want) {
			t.Errorf("kill=%v: %v", kill, err)
		}
		if d > timeout+time.Second {
			t.Errorf("kill=%v: the error took %v (timeout %v)", kill, d, timeout)
		}
		t.Logf("kill=%v: after %v: %v", kill, d.Round(time.Millisecond), err)
		g.Close()
	}
}

// TestDDPTwoProcesses: the 2-rank MLP with each rank its own process, the exact all-reduce over
// TCP, ends with the same bits as the in-process ranks (the golden hash).
func TestDDPTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	golden := readGolden(t)["mlp/ranks=2"]
	port := freePort(t)
	_, out := startChild(t, "train", port)
	w, err := Init(Env{Rank: 0, WorldSize: 2, MasterAddr: "127.0.0.1", MasterPort: port}, ops.CPU(), RunOptions{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ps, err := trainMLP(w, mlpData(t), 4)
	if err != nil {
		t.Fatal(err)
	}
	if h := paramHash(ps); h != golden {
		t.Errorf("rank 0: %s, golden %s", h, golden)
	}
	if !out.Scan() || out.Text() != "hash "+golden {
		t.Errorf("rank 1 said %q, want hash %s", out.Text(), golden)
	}
}
