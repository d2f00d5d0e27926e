package dist

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/torchlean-go/torchlean/ops"
)

// Worker is one rank of a running group: what a rank's training function needs.
type Worker struct {
	Rank      int         // this rank, 0 <= Rank < WorldSize
	WorldSize int         // the number of ranks
	LocalRank int         // the rank among this machine's ranks (the device index)
	Device    *ops.Device // this rank's device
	Comm      *ops.Comm   // this rank's communicator

	closer func() error
}

// Close frees the communicator and, after Init, the rendezvous connections.
func (w *Worker) Close() error {
	err := w.Comm.Close()
	if w.closer != nil {
		err = errors.Join(err, w.closer())
	}
	return err
}

// RunOptions configure RunLocal and Init.
type RunOptions struct {
	// Exact selects the exact all-reduce on NCCL communicators (host communicators are always
	// exact). The fast mode is NCCL's own.
	Exact bool
	// Timeout bounds every wait for the other ranks and the rendezvous (0:
	// ops.DefaultCollectiveTimeout).
	Timeout time.Duration
	// HostOnly uses host communicators even on CUDA devices (no NCCL): the exact all-reduce
	// through host memory.
	HostOnly bool
}

// RankError is the error of one rank of RunLocal.
type RankError struct {
	Rank int
	Err  error
}

func (e *RankError) Error() string { return fmt.Sprintf("dist: rank %d: %v", e.Rank, e.Err) }
func (e *RankError) Unwrap() error { return e.Err }

// RunLocal runs fn once per device of devs, each call in its own goroutine as rank i of
// len(devs) ranks (LocalRank i), and waits for all of them. Several CUDA devices get NCCL
// communicators when libnccl loads and o.HostOnly is off; otherwise (the CPU, listed several
// times for several simulated ranks) the ranks share an in-process ops.LocalGroup. A rank whose
// fn returns an error aborts the group, so the others fail at their next collective instead of
// waiting. The result is nil when every rank succeeded, else the errors joined (*RankError each),
// the first failure first.
func RunLocal(devs []*ops.Device, o RunOptions, fn func(w *Worker) error) error {
	n := len(devs)
	if n == 0 {
		return errors.New("dist: RunLocal: no devices")
	}
	o.Timeout = timeoutOr(o.Timeout)
	comms, err := localComms(devs, o)
	if err != nil {
		return err
	}
	var (
		mu    sync.Mutex
		order []error
		wg    sync.WaitGroup
	)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &Worker{Rank: r, WorldSize: n, LocalRank: r, Device: devs[r], Comm: comms[r]}
			err := w.run(fn)
			if err == nil {
				return
			}
			comms[r].Abort(err)
			mu.Lock()
			order = append(order, &RankError{Rank: r, Err: err})
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, c := range comms {
		c.Close()
	}
	return errors.Join(order...)
}

// run calls fn, turning a panic of the rank into its error so that the group is aborted.
func (w *Worker) run(fn func(w *Worker) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(w)
}

// localComms makes the communicators of RunLocal.
func localComms(devs []*ops.Device, o RunOptions) ([]*ops.Comm, error) {
	n := len(devs)
	comms := make([]*ops.Comm, n)
	co := ops.CommOptions{Exact: o.Exact, Timeout: o.Timeout}
	if useNCCL(devs, o) {
		id, err := ops.NewCommID()
		if err != nil {
			return nil, fmt.Errorf("dist: %w", err)
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for r := range n { // ncclCommInitRank blocks until every rank has called it
			wg.Add(1)
			go func() {
				defer wg.Done()
				comms[r], errs[r] = ops.NewNCCLComm(devs[r], id, r, n, co)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("dist: %w", err)
		}
		return comms, nil
	}
	g, err := ops.NewLocalGroup(n, o.Timeout)
	if err != nil {
		return nil, err
	}
	for r := range n {
		if comms[r], err = ops.NewHostComm(devs[r], r, n, g.Rank(r), co); err != nil {
			return nil, err
		}
	}
	return comms, nil
}

// useNCCL reports whether devs are all CUDA devices and libnccl loads (and o allows it).
func useNCCL(devs []*ops.Device, o RunOptions) bool {
	if o.HostOnly {
		return false
	}
	for _, d := range devs {
		if d.Kind() != ops.KindCUDA {
			return false
		}
	}
	ok, _ := ops.NCCLAvailable()
	return ok
}

// LocalDevices returns the devices RunLocal should use: every CUDA device of the machine when
// at least one is usable, else n ranks on the CPU (n >= 1).
func LocalDevices(n int) []*ops.Device {
	var devs []*ops.Device
	for i := 0; ; i++ {
		d, err := ops.Open("cuda:" + strconv.Itoa(i))
		if err != nil {
			break
		}
		devs = append(devs, d)
	}
	if len(devs) > 0 {
		return devs
	}
	for range max(n, 1) {
		devs = append(devs, ops.CPU())
	}
	return devs
}

// Env is a rank's place in a group of processes, as torchrun passes it in the environment.
type Env struct {
	Rank, WorldSize, LocalRank int
	MasterAddr                 string
	MasterPort                 int
}

// EnvFromOS reads RANK, WORLD_SIZE, LOCAL_RANK (default: RANK), MASTER_ADDR (default
// 127.0.0.1) and MASTER_PORT (default 29500, torchrun's) from the environment. ok is false when
// RANK and WORLD_SIZE are both unset (not launched as a group); a malformed value is an error
// naming the variable.
func EnvFromOS() (e Env, ok bool, err error) {
	return envFrom(os.LookupEnv)
}

func envFrom(lookup func(string) (string, bool)) (Env, bool, error) {
	_, hasRank := lookup("RANK")
	_, hasWorld := lookup("WORLD_SIZE")
	if !hasRank && !hasWorld {
		return Env{}, false, nil
	}
	e := Env{MasterAddr: "127.0.0.1", MasterPort: 29500}
	num := func(name string, dst *int, def int, required bool) error {
		v, ok := lookup(name)
		if !ok || v == "" {
			if required {
				return fmt.Errorf("dist: %s is not set", name)
			}
			*dst = def
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("dist: %s=%q is not an integer", name, v)
		}
		*dst = n
		return nil
	}
	if err := errors.Join(num("RANK", &e.Rank, 0, true), num("WORLD_SIZE", &e.WorldSize, 0, true)); err != nil {
		return Env{}, true, err
	}
	if err := errors.Join(num("LOCAL_RANK", &e.LocalRank, e.Rank, false), num("MASTER_PORT", &e.MasterPort, 29500, false)); err != nil {
		return Env{}, true, err
	}
	if v, ok := lookup("MASTER_ADDR"); ok && v != "" {
		e.MasterAddr = v
	}
	return e, true, e.Validate()
}

// Validate checks the ranges: 1 <= WorldSize, 0 <= Rank < WorldSize, LocalRank >= 0, a
// MASTER_PORT of 1 to 65535, a MASTER_ADDR.
func (e Env) Validate() error {
	switch {
	case e.WorldSize < 1:
		return fmt.Errorf("dist: WORLD_SIZE=%d (want >= 1)", e.WorldSize)
	case e.Rank < 0 || e.Rank >= e.WorldSize:
		return fmt.Errorf("dist: RANK=%d outside [0, WORLD_SIZE=%d)", e.Rank, e.WorldSize)
	case e.LocalRank < 0:
		return fmt.Errorf("dist: LOCAL_RANK=%d", e.LocalRank)
	case e.MasterPort < 1 || e.MasterPort > 65535:
		return fmt.Errorf("dist: MASTER_PORT=%d (want 1 to 65535)", e.MasterPort)
	case e.MasterAddr == "":
		return errors.New("dist: MASTER_ADDR is empty")
	}
	return nil
}

// Init joins the group of processes described by e on device d (nil: cuda:LOCAL_RANK when that
// device opens, else the CPU): a TCP rendezvous at MASTER_ADDR:MASTER_PORT (rank 0 listens on
// that port on every interface), then, on a CUDA device with libnccl (and not o.HostOnly), an
// NCCL communicator whose unique id rank 0 made and the rendezvous carried; otherwise a host
// communicator whose exact all-reduce travels over the rendezvous connections through rank 0.
// Every rank must choose the same kind (all CUDA with NCCL, or none): the rendezvous checks it.
func Init(e Env, d *ops.Device, o RunOptions) (*Worker, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	o.Timeout = timeoutOr(o.Timeout)
	if d == nil {
		if c, err := ops.Open("cuda:" + strconv.Itoa(e.LocalRank)); err == nil {
			d = c
		} else {
			d = ops.CPU()
		}
	}
	nccl := useNCCL([]*ops.Device{d}, o)
	kind := byte('h')
	var payload []byte
	if nccl {
		kind = 'n'
		if e.Rank == 0 {
			id, err := ops.NewCommID()
			if err != nil {
				return nil, fmt.Errorf("dist: %w", err)
			}
			payload = id[:]
		}
	}
	t, got, err := Rendezvous(e, kind, payload, o.Timeout)
	if err != nil {
		return nil, err
	}
	w := &Worker{Rank: e.Rank, WorldSize: e.WorldSize, LocalRank: e.LocalRank, Device: d}
	co := ops.CommOptions{Exact: o.Exact, Timeout: o.Timeout}
	if nccl {
		var id ops.CommID
		if len(got) != len(id) {
			t.Close()
			return nil, fmt.Errorf("dist: rendezvous carried %d bytes, not an NCCL unique id", len(got))
		}
		copy(id[:], got)
		t.Close() // NCCL has its own connections from here on
		if w.Comm, err = ops.NewNCCLComm(d, id, e.Rank, e.WorldSize, co); err != nil {
			return nil, fmt.Errorf("dist: %w", err)
		}
		return w, nil
	}
	if w.Comm, err = ops.NewHostComm(d, e.Rank, e.WorldSize, t, co); err != nil {
		t.Close()
		return nil, err
	}
	w.closer = t.Close
	return w, nil
}
