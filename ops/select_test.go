package ops

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/torchlean-go/torchlean/driver"
)

func TestSelectDevice(t *testing.T) {
	never := func(int) (*Device, error) { t.Fatal("CUDA opened although TORCHLEAN_DEVICE=cpu"); return nil, nil }
	if s := selectDevice("cpu", never); s.Device != CPU() || s.Reason != "TORCHLEAN_DEVICE=cpu" {
		t.Errorf("forced cpu: %+v", s)
	}
	_, noLib := driver.LoadFrom("/nonexistent/libcuda.so.1")
	if !errors.Is(noLib, driver.ErrNoLibrary) {
		t.Fatalf("LoadFrom of a missing file: %v", noLib)
	}
	for _, c := range []struct {
		err    error
		reason string
	}{
		{noLib, "no CUDA library"},
		{fmt.Errorf("cuInit: %w", driver.ErrNoDevice), "no CUDA device"},
		{fmt.Errorf("%w: driver reports 11.4", driver.ErrDriverTooOld), "CUDA driver too old"},
		{fmt.Errorf("%w: cuInit in libc.so.6", driver.ErrMissingSymbol), "CUDA unusable"},
	} {
		s := selectDevice("", func(int) (*Device, error) { return nil, c.err })
		if s.Device != CPU() || s.Reason != c.reason || s.Err == nil {
			t.Errorf("%v: got %+v, want reason %q", c.err, s, c.reason)
		}
	}
	var asked int
	selectDevice("cuda:3", func(n int) (*Device, error) { asked = n; return nil, noLib })
	if asked != 3 {
		t.Errorf("cuda:3 opened device %d", asked)
	}
}

// TestDefaultOnThisMachine checks the real selection: on a machine without libcuda the reason is
// "no CUDA library"; with Debian's libcuda1 but no GPU, "no CUDA device"; with a GPU, CUDA.
func TestDefaultOnThisMachine(t *testing.T) {
	s := DefaultSelection()
	t.Logf("default device %s (reason %q, err %v)", s.Device, s.Reason, s.Err)
	if os.Getenv("TORCHLEAN_DEVICE") != "" {
		return
	}
	_, err := driver.Load()
	switch {
	case err == nil:
		if s.Device.Kind() != KindCUDA && s.Reason != "CUDA driver too old" {
			t.Errorf("libcuda loads and a device exists, but the default is %s (%s)", s.Device, s.Reason)
		}
	case errors.Is(err, driver.ErrNoLibrary):
		if s.Reason != "no CUDA library" {
			t.Errorf("no libcuda: reason %q", s.Reason)
		}
	case errors.Is(err, driver.ErrNoDevice):
		if s.Reason != "no CUDA device" {
			t.Errorf("libcuda without a device: reason %q", s.Reason)
		}
	}
}

// TestParseDevice checks the device names of Open and TORCHLEAN_DEVICE.
func TestParseDevice(t *testing.T) {
	for name, want := range map[string]int{"cpu": cpuOrdinal, " CPU ": cpuOrdinal, "cuda": 0, "cuda:0": 0,
		"cuda:12": 12, "": autoOrdinal, "auto": autoOrdinal} {
		if got, err := parseDevice(name); err != nil || got != want {
			t.Errorf("parseDevice(%q) = %d, %v; want %d", name, got, err, want)
		}
	}
	for _, name := range []string{"bogus", "cuda:", "cuda:1abc", "cuda:-1", "cuda:+1", "cuda: 1", "gpu", "cuda:99999999999999999999"} {
		if _, err := parseDevice(name); err == nil {
			t.Errorf("parseDevice(%q): no error", name)
		}
		if _, err := Open(name); err == nil {
			t.Errorf("Open(%q): no error", name)
		}
		never := func(int) (*Device, error) { t.Fatalf("%q opened CUDA", name); return nil, nil }
		if s := selectDevice(name, never); s.Device != CPU() || s.Err == nil || s.Reason != fmt.Sprintf("bad TORCHLEAN_DEVICE %q", name) {
			t.Errorf("TORCHLEAN_DEVICE=%q: %+v", name, s)
		}
	}
}
