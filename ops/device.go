// Package ops is the device-agnostic layer: float32 Buffers on the CPU or a CUDA device, the
// allocator telemetry of each device, the deterministic-reductions flag, and the kernels of the
// seed documents with their semantics (fresh result buffers, borrowed inputs): elementwise
// functions and their backward kernels, random numbers, reductions, views and layout, indexing,
// softmax, layer norm, matmul, the optimizer steps, the real FFT and the FNO spectral
// convolution, the selective scan, flash attention, convolution and pooling, and the everyday
// ops beyond the seeds (sort, top-k, cumsum, pow, where, multinomial sampling).
//
// A Device hides its backend behind an interface: the CPU backend runs the Go twins in package
// cpu, the CUDA backend launches the PTX of package ptx through package driver. The two compute
// identical bits for every kernel (README.md, "The arithmetic contract"); the mirror tests of
// this package prove it on a GPU machine, and golden hashes of those runs let CPU-only CI guard
// the parity.
package ops

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Kind says which backend a Device runs on.
type Kind int

const (
	KindCPU  Kind = iota // the Go backend of package cpu, in host memory
	KindCUDA             // an NVIDIA GPU through the CUDA driver
)

// String returns "cpu" or "cuda".
func (k Kind) String() string {
	if k == KindCUDA {
		return "cuda"
	}
	return "cpu"
}

// Device is where buffers live and kernels run. Devices are created once and live for the
// process; they are safe for concurrent use.
type Device struct {
	kind  Kind
	name  string
	be    backend
	stats counters
	fft   fftPlanCache // the cached FFT plans (fft.go)
	cufft cufftCache   // the cuFFT tier's library and plans (cufft.go)
}

// Kind reports the backend (KindCPU for a nil device, whose ops all fail).
func (d *Device) Kind() Kind {
	if d == nil {
		return KindCPU
	}
	return d.kind
}

// String names the device, e.g. "cpu" or "cuda:0 (NVIDIA H100 80GB HBM3, sm_90)".
func (d *Device) String() string {
	if d == nil {
		return "<nil device>"
	}
	return d.name
}

// check reports a nil device, or one not made by CPU, Default or Open (a zero Device).
func (d *Device) check() error {
	if d == nil {
		return errors.New("ops: nil device")
	}
	if d.be == nil {
		return errors.New("ops: unopened device (get devices from ops.CPU, ops.Default or ops.Open)")
	}
	return nil
}

// Sync waits for all work queued on the device and returns the first device error, if any
// (kernel faults are reported here and, once seen, by every later call: the device is lost).
func (d *Device) Sync() error {
	if err := d.check(); err != nil {
		return err
	}
	return d.be.sync()
}

// counters is the allocator telemetry of one device.
type counters struct {
	live, peak, allocs, frees atomic.Int64
}

func (c *counters) allocated(bytes int64) {
	c.allocs.Add(1)
	live := c.live.Add(bytes)
	for {
		p := c.peak.Load()
		if live <= p || c.peak.CompareAndSwap(p, live) {
			return
		}
	}
}

func (c *counters) released(bytes int64) {
	c.frees.Add(1)
	c.live.Add(-bytes)
}

// Stats is a snapshot of a device's allocator telemetry. The counts cover every buffer the
// package creates on the device: results, and also the ops' internal partials (e.g. Sum's chunk
// sums) and uploaded index lists (Indices), which are released before the op returns or with
// their owner; so one op may add more than one to AllocCount and raise PeakBytes above its
// inputs plus its result. (TorchLean counted kernel scratch apart.)
type Stats struct {
	LiveBytes   int64  // bytes of live (unreleased) buffers: 4 per element
	PeakBytes   int64  // high-water mark of LiveBytes
	AllocCount  int64  // non-empty buffers created
	FreeCount   int64  // non-empty buffers released (explicitly or by the garbage collector)
	CachedBytes int64  // memory parked in the caching allocator for reuse, and cached tables (spectral convolution)
	DeviceFree  uint64 // free device memory reported by the driver (0 on the CPU)
	DeviceTotal uint64 // total device memory (0 on the CPU)
	// FFTPlans is the number of cached FFT plans and FFTPlanBytes the device memory of their
	// tables (twiddles and the like), which is not part of LiveBytes; Collect(true) frees them.
	FFTPlans     int
	FFTPlanBytes int64
	// CUFFTPlans is the number of cached cuFFT plans (the fast tier of the FFT, cufft.go) and
	// CUFFTWorkBytes the device memory they hold: cuFFT's work areas and the inverse's edge masks,
	// outside LiveBytes; Collect(true) frees them.
	CUFFTPlans     int
	CUFFTWorkBytes int64
}

// Stats returns the device's allocator telemetry. Each counter is exact once the device is
// quiet; a snapshot taken while other goroutines allocate reads the counters one after another
// (not atomically) but keeps FreeCount <= AllocCount and LiveBytes <= PeakBytes.
func (d *Device) Stats() Stats {
	if d.check() != nil {
		return Stats{}
	}
	// A free is counted after its allocation and the peak after the live bytes grew: read the
	// later counter first.
	var s Stats
	s.FreeCount = d.stats.frees.Load()
	s.AllocCount = d.stats.allocs.Load()
	s.LiveBytes = d.stats.live.Load()
	s.PeakBytes = max(d.stats.peak.Load(), s.LiveBytes)
	if c, ok := d.be.(interface{ cachedBytes() int64 }); ok {
		s.CachedBytes = c.cachedBytes()
	}
	s.CachedBytes += spectralCachedBytes(d)
	s.DeviceFree, s.DeviceTotal = d.be.memInfo()
	s.FFTPlans, s.FFTPlanBytes = d.fft.stats()
	s.CUFFTPlans, s.CUFFTWorkBytes = d.cufft.stats()
	return s
}

// MiB formats a byte count as mebibytes with two decimals.
func MiB(bytes int64) string { return fmt.Sprintf("%.2f MiB", float64(bytes)/(1<<20)) }

// String is the one-line report for progress logs.
func (s Stats) String() string {
	line := fmt.Sprintf("live=%s peak=%s allocs=%d frees=%d cached=%s", MiB(s.LiveBytes), MiB(s.PeakBytes),
		s.AllocCount, s.FreeCount, MiB(s.CachedBytes))
	if s.FFTPlans > 0 {
		line += fmt.Sprintf(" fft_plans=%d (%s)", s.FFTPlans, MiB(s.FFTPlanBytes))
	}
	if s.CUFFTPlans > 0 {
		line += fmt.Sprintf(" cufft_plans=%d (%s)", s.CUFFTPlans, MiB(s.CUFFTWorkBytes))
	}
	if s.DeviceTotal > 0 {
		line += fmt.Sprintf(" device_free=%s/%s", MiB(int64(s.DeviceFree)), MiB(int64(s.DeviceTotal)))
	}
	return line
}

// Collect returns memory the device holds for reuse: with force, every cached CUDA block goes
// back to the driver (after the device finished its work), and the CPU's cached slices go to the
// garbage collector, and the cached tables of the spectral convolution (SpectralConv1dBatched)
// and the FFT plans (their tables freed once no op uses them) are released. Without force it
// does nothing. It never changes a buffer. (The CPU cache is bounded anyway, by 1/32 of the
// process's memory limit, kept between 64 MiB and 1 GiB; the CUDA cache grows until an
// allocation fails, which empties it and retries.)
func (d *Device) Collect(force bool) error {
	if err := d.check(); err != nil || !force {
		return err
	}
	if g, ok := d.be.(*cudaBackend); ok { // refused inside a capture before anything is dropped
		if err := g.refuseCapturing("Device.Collect", whySync); err != nil {
			return err
		}
	}
	dropSpectralTables(d)
	d.fft.drop() // the FFT plans' tables, freed once no op uses them
	d.cufft.drop(d)
	return d.be.collect()
}

// Deterministic-reductions mode (see SetDeterministic).
var deterministic atomic.Bool

func init() { deterministic.Store(deterministicFromEnv(os.LookupEnv)) }

// deterministicFromEnv is the initial deterministic mode: TORCHLEAN_DETERMINISTIC (envOn) when it
// is set and not empty, else TorchLean's own variable TORCHLEAN_CUDA_DETERMINISTIC_REDUCTIONS with
// TorchLean's rule (off when unset, empty or 0, on otherwise), so that a run configured for
// TorchLean gets the mode it asked for.
func deterministicFromEnv(lookup func(string) (string, bool)) bool {
	if v, _ := lookup("TORCHLEAN_DETERMINISTIC"); strings.TrimSpace(v) != "" {
		return envOn(v)
	}
	v, _ := lookup("TORCHLEAN_CUDA_DETERMINISTIC_REDUCTIONS")
	return v != "" && v != "0"
}

// envOn reads a switch from the environment: off when v is empty or one of 0, f, false, n, no,
// off (any case, surrounding spaces ignored), on otherwise.
func envOn(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "f", "false", "off", "no", "n":
		return false
	}
	return true
}

// SetDeterministic turns deterministic-reductions mode on or off for the process. Two families
// read it: the scatter-adds (in fast mode they accumulate with atomics on a GPU, in index order
// on the CPU; in deterministic mode they add each target's values in index order, bit-identical
// on both) and the real FFTs (in fast mode a GPU may use cuFFT, see Device.FFTBackend; in
// deterministic mode always our exact FFT). Every other kernel (reductions, broadcast adjoints,
// matmul) has one fixed order in both modes. The initial value comes from TORCHLEAN_DETERMINISTIC (off for 0, f,
// false, n, no or off, in any case; on for any other non-empty value such as 1, true or on) or,
// when that is unset or empty, from TorchLean's TORCHLEAN_CUDA_DETERMINISTIC_REDUCTIONS (on
// unless unset, empty or 0). Both are read once, when the package is initialized.
func SetDeterministic(on bool) { deterministic.Store(on) }

// Deterministic reports the mode.
func Deterministic() bool { return deterministic.Load() }

// SetDeterministicChecked sets the mode and returns the value observed afterwards.
func SetDeterministicChecked(on bool) bool {
	deterministic.Store(on)
	return deterministic.Load()
}

// cpuDevice is the process's CPU device.
var cpuDevice = &Device{kind: KindCPU, name: "cpu", be: hostBackend}

// CPU returns the CPU device.
func CPU() *Device { return cpuDevice }

// Selection is the outcome of choosing the default device.
type Selection struct {
	// Device is the device chosen: never nil (the CPU when no CUDA device can be used).
	Device *Device
	// Reason says why the CPU was chosen ("" when a CUDA device was): "TORCHLEAN_DEVICE=cpu",
	// "no CUDA library", "no CUDA device", "CUDA driver too old" (for the embedded PTX),
	// "bad TORCHLEAN_DEVICE ..." (a value it cannot read), or "CUDA unusable" for any other
	// failure to open the device (e.g. a libcuda that lacks a function this package needs);
	// Err tells which.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

var (
	selectOnce sync.Once
	selected   Selection
)

// Default returns the default device: the first CUDA device when libcuda loads, cuInit succeeds
// and a device exists; otherwise the CPU. TORCHLEAN_DEVICE=cpu forces the CPU;
// TORCHLEAN_DEVICE=cuda or cuda:N asks for CUDA device 0 or N, and Default still falls back to
// the CPU when that device cannot be used (Open fails instead). DefaultSelection tells why the
// CPU was chosen, including a TORCHLEAN_DEVICE value it does not understand.
func Default() *Device { return DefaultSelection().Device }

// DefaultSelection returns the default device with the reason for the choice.
func DefaultSelection() Selection {
	selectOnce.Do(func() { selected = selectDevice(os.Getenv("TORCHLEAN_DEVICE"), openCUDA) })
	return selected
}

// selectDevice implements Default for a TORCHLEAN_DEVICE value and a CUDA opener.
func selectDevice(env string, open func(ordinal int) (*Device, error)) Selection {
	ordinal, err := parseDevice(env)
	switch {
	case err != nil:
		return Selection{Device: cpuDevice, Reason: "bad TORCHLEAN_DEVICE " + strconv.Quote(env), Err: err}
	case ordinal == cpuOrdinal:
		return Selection{Device: cpuDevice, Reason: "TORCHLEAN_DEVICE=cpu"}
	}
	d, err := open(max(ordinal, 0))
	if err != nil {
		return Selection{Device: cpuDevice, Reason: cudaReason(err), Err: err}
	}
	return Selection{Device: d}
}

// Ordinals of parseDevice that are not CUDA device numbers.
const (
	cpuOrdinal  = -1
	autoOrdinal = -2
)

// parseDevice reads a device name (case and surrounding space ignored): "cpu" -> cpuOrdinal,
// "cuda" -> 0, "cuda:N" -> N (decimal digits only), "" or "auto" -> autoOrdinal.
func parseDevice(name string) (int, error) {
	name = strings.TrimSpace(strings.ToLower(name))
	switch name {
	case "cpu":
		return cpuOrdinal, nil
	case "cuda":
		return 0, nil
	case "", "auto":
		return autoOrdinal, nil
	}
	if rest, ok := strings.CutPrefix(name, "cuda:"); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
		if n, err := strconv.Atoi(rest); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("ops: unknown device %q (want cpu, cuda, cuda:N or auto)", name)
}

// Open returns a device by name: "cpu", "cuda" (device 0), "cuda:N", or "auto" / "" (Default).
// Unlike Default it fails when the CUDA device asked for cannot be used.
func Open(name string) (*Device, error) {
	ordinal, err := parseDevice(name)
	switch {
	case err != nil:
		return nil, err
	case ordinal == cpuOrdinal:
		return cpuDevice, nil
	case ordinal == autoOrdinal:
		return Default(), nil
	}
	return openCUDA(ordinal)
}
