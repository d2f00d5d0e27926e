package testenv

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fatalTB records Fatalf instead of stopping the test (it runs CUDADefines' Fatalf paths), and
// the messages of Errorf.
type fatalTB struct {
	testing.TB
	failed string
	errors []string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(f)
}
func (f *fatalTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fatalTB) Helper() {}

// fatal runs fn and returns the format of the Fatalf it called, or "".
func fatal(t *testing.T, fn func(tb testing.TB)) (msg string) {
	f := &fatalTB{TB: t}
	defer func() {
		if r := recover(); r != nil {
			if r != any(f) {
				panic(r)
			}
			msg = f.failed
		}
	}()
	fn(f)
	return ""
}

func TestCUDADefines(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.cuh")
	b := filepath.Join(dir, "b.cu")
	write := func(path, src string) {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(a, `#pragma once
#define THREADS 256
#define CHUNK 0x2000u  // a trailing comment
#define BITS 0x7fffffffu
#define BIG 1ULL
#define OCT 010
#define HALF 0.5f
#define THIRD 0.1f
#define THIRD64 0.1
#define EXP 1e-3F
#define LONGS (THREADS * 4 * 32) /* a block comment */
#define WARPS (THREADS / 32)
#define TRUNC (7 / 2)
#define FDIV (7 / 2.0)
#define NEG -(3 - 5)
#define SPLIT (THREADS + \
               1)
#define FN(x) ((x) + 1)
#define CAST (u64)8
#define CALL __uint_as_float(0x3f800000u)
#define SHIFT (1 << 4)
#define UNKNOWN (NOWHERE + 1)
#define EMPTY
#define HEXF 0x1f
  # define INDENTED 3
`)
	write(b, `#include "a.cuh"
#define ROWS (CHUNK / THREADS)
#define GONE 1
#undef GONE
#define THREADS 256
`)
	d := CUDADefines(t, a, b)
	want := map[string]float64{
		"THREADS": 256, "CHUNK": 8192, "BITS": 0x7fffffff, "BIG": 1, "OCT": 8, "HALF": 0.5,
		"THIRD": float64(float32(0.1)), "THIRD64": 0.1, "EXP": float64(float32(1e-3)),
		"LONGS": 32768, "WARPS": 8, "TRUNC": 3, "FDIV": 3.5, "NEG": 2, "SPLIT": 257, "HEXF": 31,
		"INDENTED": 3, "ROWS": 32,
	}
	for name, w := range want {
		if v, ok := d[name]; !ok || v != w {
			t.Errorf("%s = %v (defined %v), want %v", name, v, ok, w)
		}
	}
	for name := range d {
		if _, ok := want[name]; !ok {
			t.Errorf("%s = %v, want it left out", name, d[name])
		}
	}

	if msg := fatal(t, func(tb testing.TB) { CUDADefines(tb, filepath.Join(dir, "missing.cu")) }); msg == "" {
		t.Error("a missing file did not fail the test")
	}
	c := filepath.Join(dir, "c.cu")
	write(c, "#define THREADS 128\n")
	if msg := fatal(t, func(tb testing.TB) { CUDADefines(tb, a, c) }); !strings.Contains(msg, "redefines") {
		t.Errorf("a conflicting redefinition gave %q", msg)
	}
}

func TestCUDADefinesExpr(t *testing.T) {
	env := map[string]float64{"BM": 128, "WM": 32, "BN": 64, "WN": 64, "X": 2.5}
	for _, c := range []struct {
		expr string
		want float64
		ok   bool
	}{
		{"(BM / WM) * (BN / WN) * 32", 128, true},
		{"BM / 3", 42, true},
		{"X / 2", 1.25, true},
		{"1.5f * 2", 3, true},
		{"BM // a comment", 128, true},
		{"BM % 3", 0, false},
		{"Y + 1", 0, false},
		{"BM / 0", 0, false},
	} {
		v, ok := CUDAExpr(c.expr, env)
		if ok != c.ok || ok && v != c.want {
			t.Errorf("CUDAExpr(%q) = %v, %v; want %v, %v", c.expr, v, ok, c.want, c.ok)
		}
	}
	if v, ok := CUDAExpr("1.0 / 0.0", nil); !ok || !math.IsInf(v, 1) {
		t.Errorf("1.0 / 0.0 = %v, %v", v, ok)
	}
}

func TestCUDADefinesCheck(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.cuh"), filepath.Join(dir, "b.cu")
	if err := os.WriteFile(a, []byte("#define T 256\n#define C 0.1f\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("#define R 16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fatalTB{TB: t}
	CheckCUDAConstants(f, []CUDAConstant{
		{a, "T", "t", 256, false},
		{a + " " + b, "T * R", "tr", 4096, false},
		{a, "C", "c", float64(float32(0.1)), true},
		{a, "C", "c64", 0.1, true}, // equal as float32
		{a, "T", "wrong", 128, false},
		{a, "T * R", "noR", 4096, false},
		{a, "C", "c", 0.2, true},
	})
	want := []string{"T = 256, but the Go twin wrong = 128", "no numeric #define of [R]", "C = 0.1 (float32), but the Go twin c = 0.2"}
	if len(f.errors) != len(want) {
		t.Fatalf("errors %q, want %d", f.errors, len(want))
	}
	for i, w := range want {
		if !strings.Contains(f.errors[i], w) {
			t.Errorf("error %q, want it to contain %q", f.errors[i], w)
		}
	}
}
