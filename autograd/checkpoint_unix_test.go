//go:build unix

package autograd_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// TestSaveTensorsFileMode: a new checkpoint gets os.Create's permissions (0666 less the umask),
// a replaced one keeps its own.
func TestSaveTensorsFileMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	b, err := ops.FromFloat32(ops.CPU(), []float32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	tensors := map[string]autograd.NamedTensor{"w": {Buf: b, Shape: []int{2}}}
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	mode := func() os.FileMode {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	// Two umasks, so that neither os.CreateTemp's fixed 0600 nor a forced 0644 passes.
	for _, c := range []struct{ umask, want os.FileMode }{{0o022, 0o644}, {0o077, 0o600}} {
		syscall.Umask(int(c.umask))
		os.Remove(path)
		if err := autograd.SaveTensorsFile(path, tensors, nil); err != nil {
			t.Fatal(err)
		}
		if m := mode(); m != c.want {
			t.Errorf("new file under umask %03o: mode %o, want %o", c.umask, m, c.want)
		}
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := autograd.SaveTensorsFile(path, tensors, nil); err != nil {
		t.Fatal(err)
	}
	if m := mode(); m != 0o640 {
		t.Errorf("replaced file: mode %o, want its 640", m)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
