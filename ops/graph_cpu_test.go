package ops

import (
	"errors"
	"slices"
	"testing"
)

func TestCaptureUnsupportedOnCPU(t *testing.T) {
	d := CPU()
	if err := d.CanCapture(); !errors.Is(err, ErrCaptureUnsupported) {
		t.Errorf("CanCapture on the CPU = %v", err)
	}
	called := false
	if _, err := d.Capture(func() error { called = true; return nil }); !errors.Is(err, ErrCaptureUnsupported) || called {
		t.Errorf("Capture on the CPU = %v (f called %v)", err, called)
	}
}

func TestUploadCopyInto(t *testing.T) {
	d := CPU()
	a, _ := Zeros(d, 3)
	b, _ := Full(d, 3, 7)
	defer a.Release()
	defer b.Release()
	if err := Upload(a, []float32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Float32s(); !slices.Equal(got, []float32{1, 2, 3}) {
		t.Errorf("after Upload: %v", got)
	}
	if err := Upload(a, []float32{1}); err == nil {
		t.Error("Upload of the wrong length succeeded")
	}
	if err := CopyInto(a, b); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Float32s(); !slices.Equal(got, []float32{7, 7, 7}) {
		t.Errorf("after CopyInto: %v", got)
	}
	c, _ := Zeros(d, 2)
	defer c.Release()
	if err := CopyInto(c, b); err == nil {
		t.Error("CopyInto of another length succeeded")
	}
}
