package driver

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLoadFromMissing(t *testing.T) {
	c, err := LoadFrom("/nonexistent/libcuda.so.1")
	if c != nil || !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("LoadFrom(missing) = %v, %v; want ErrNoLibrary", c, err)
	}
	if Enabled && !strings.Contains(err.Error(), "/nonexistent/libcuda.so.1") {
		t.Errorf("error does not carry the loader message: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "driver: ") {
		t.Errorf("error lacks the package prefix: %v", err)
	}
}

// TestLoadFromNotCUDA: a file that is not a library, and a library without the driver's symbols
// (the C library), are errors too: ErrNoLibrary and ErrMissingSymbol naming cuInit.
func TestLoadFromNotCUDA(t *testing.T) {
	if !Enabled {
		t.Skip("this build has no loader")
	}
	text := filepath.Join(t.TempDir(), "libcuda.so.1")
	if err := os.WriteFile(text, []byte("not a shared object\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadFrom(text); c != nil || !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), text) {
		t.Errorf("LoadFrom(a text file) = %v, %v; want ErrNoLibrary naming the file", c, err)
	}
	c, err := LoadFrom("libc.so.6")
	if errors.Is(err, ErrNoLibrary) {
		t.Skipf("no glibc here: %v", err)
	}
	if c != nil || !errors.Is(err, ErrMissingSymbol) || !strings.Contains(err.Error(), "cuInit") {
		t.Errorf("LoadFrom(libc.so.6) = %v, %v; want ErrMissingSymbol naming cuInit", c, err)
	}
}

func TestLoadEnvMissing(t *testing.T) {
	t.Setenv("TORCHLEAN_LIBCUDA", "/nonexistent/libcuda.so.1")
	if c, err := Load(); c != nil || !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("Load with TORCHLEAN_LIBCUDA missing = %v, %v; want ErrNoLibrary", c, err)
	}
	t.Setenv("TORCHLEAN_CUFFT", "/nonexistent/libcufft.so.11")
	f, err := LoadCUFFT()
	if f != nil || !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("LoadCUFFT with TORCHLEAN_CUFFT missing = %v, %v; want ErrNoLibrary", f, err)
	}
	if Enabled && !strings.Contains(err.Error(), "/nonexistent/libcufft.so.11") {
		t.Errorf("error does not name the path: %v", err)
	}
}

func TestLoadNotSupported(t *testing.T) {
	if Enabled {
		t.Skip("this build has the loader")
	}
	_, err := Load()
	if !errors.Is(err, ErrNoLibrary) || !strings.HasPrefix(err.Error(), "driver: ") {
		t.Fatalf("Load in a stub build = %v", err)
	}
	t.Log(err)
}

// TestLoadNoDevice covers the CPU machine that has the NVIDIA user-space
// driver installed but no GPU: cuInit must fail with ErrNoDevice.
func TestLoadNoDevice(t *testing.T) {
	c, err := Load()
	switch {
	case errors.Is(err, ErrNoLibrary):
		t.Skipf("libcuda is not installed: %v", err)
	case err == nil:
		t.Skipf("a CUDA device is present (%s)", c.Path())
	}
	var e *Error
	if !errors.As(err, &e) || e.Call != "cuInit" || !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Load without a GPU = %v; want cuInit CUDA_ERROR_NO_DEVICE", err)
	}
	if got := err.Error(); !strings.HasPrefix(got, "driver: cuInit: CUDA_ERROR_NO_DEVICE: ") {
		t.Errorf("text = %q", got)
	}
	t.Log(err)
}

// TestResultNamesMatchLibrary checks the fallback table's names against
// cuGetErrorName of whatever libcuda was loaded (with or without a GPU).
func TestResultNamesMatchLibrary(t *testing.T) {
	if _, err := Load(); errors.Is(err, ErrNoLibrary) {
		t.Skipf("libcuda is not installed: %v", err)
	}
	if libErrorFuncs.Load() == nil {
		t.Skip("libcuda loaded without its error functions")
	}
	for r, txt := range resultText {
		if got := r.Name(); got != txt[0] {
			// Codes newer than the installed driver are unknown to it.
			if strings.HasPrefix(got, "CUDA_ERROR_") && got == "CUDA_ERROR_"+strconv.Itoa(int(r)) {
				t.Logf("%d (%s) unknown to this driver", r, txt[0])
				continue
			}
			t.Errorf("%d: library name %q, table %q", r, got, txt[0])
		}
	}
	t.Logf("ErrOutOfMemory from the library: %v", ErrOutOfMemory)
}

func TestCUFFTVersion(t *testing.T) {
	f, err := LoadCUFFT()
	if errors.Is(err, ErrNoLibrary) {
		t.Skipf("libcufft is not installed: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.Version()
	if err != nil {
		t.Fatal(err)
	}
	if v < 10000 {
		t.Errorf("cufftGetVersion = %d", v)
	}
	t.Logf("%s: cufftGetVersion %d", f.Path(), v)
}
