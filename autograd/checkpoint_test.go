package autograd_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// handMade is a safetensors file written out by hand from the format's description: tensors
// "a" (shape [1, 1]: 0.5) and "b" (shape [2]: 1, -2), metadata {"format": "pt"}.
//
// The header is 32 bytes of metadata entry, 55 of "a" and 54 of "b" (with the closing brace):
// 141 bytes, padded with 3 spaces to 144 = 0x90, a multiple of 8. The data are float32 bit
// patterns, little-endian: 0.5 = 0x3f000000, 1 = 0x3f800000, -2 = 0xc0000000.
const handMade = "\x90\x00\x00\x00\x00\x00\x00\x00" +
	`{"__metadata__":{"format":"pt"},` +
	`"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]},` +
	`"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}` + "   " +
	"\x00\x00\x00\x3f" +
	"\x00\x00\x80\x3f" + "\x00\x00\x00\xc0"

func TestSaveTensorsBytes(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		a, b := upload(t, d, 0.5), upload(t, d, 1, -2)
		defer a.Release()
		defer b.Release()
		ts := map[string]autograd.NamedTensor{"b": {Shape: []int{2}, Buf: b}, "a": {Shape: []int{1, 1}, Buf: a}}
		var w bytes.Buffer
		if err := autograd.SaveTensors(&w, ts, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
		if got := w.String(); got != handMade {
			t.Errorf("SaveTensors wrote\n%q\nwant\n%q", got, handMade)
		}

		got, meta, err := autograd.LoadTensors(strings.NewReader(handMade), d)
		if err != nil {
			t.Fatal(err)
		}
		defer autograd.ReleaseTensors(got)
		if !maps.Equal(meta, map[string]string{"format": "pt"}) {
			t.Errorf("metadata %v", meta)
		}
		check := func(name string, shape []int, want ...float64) {
			g, ok := got[name]
			if !ok || !slices.Equal(g.Shape, shape) || !slices.Equal(values(t, g.Buf), want) || g.Buf.Device() != d {
				t.Errorf("%s: got %v, want shape %v values %v on %s", name, g, shape, want, d)
			}
		}
		check("a", []int{1, 1}, 0.5)
		check("b", []int{2}, 1, -2)
	})
}

func TestTensorsRoundTrip(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
			math.Float32frombits(0x7fc00001), math.Float32frombits(1), math.MaxFloat32, -1.5}
		big := make([]float32, 100_003) // crosses the 64 KiB encoding chunks
		for i := range big {
			big[i] = float32(i)*0.25 - 7
		}
		in := map[string]autograd.NamedTensor{}
		add := func(name string, shape []int, v []float32) {
			b, err := ops.FromFloat32(d, v)
			if err != nil {
				t.Fatal(err)
			}
			in[name] = autograd.NamedTensor{Shape: shape, Buf: b}
		}
		add("layer1.weight", []int{2, 4}, special)
		add("big", []int{100_003}, big)
		add("scalar", []int{}, []float32{3})
		add("empty", []int{0, 5}, nil)
		add("adam/m/layer1.weight", []int{8}, special)
		add("ünï<&>\"quoted\"\n", []int{1}, []float32{42})
		defer autograd.ReleaseTensors(in)
		meta := map[string]string{"step": "1200", "note": "<&> \"ü\"\t", "": ""}

		path := filepath.Join(t.TempDir(), "model.safetensors")
		if err := autograd.SaveTensorsFile(path, in, meta); err != nil {
			t.Fatal(err)
		}
		if err := autograd.SaveTensorsFile(path, in, meta); err != nil { // replaces the file
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
			t.Errorf("directory holds %d entries, want only the checkpoint", len(ents))
		}
		for _, to := range []*ops.Device{d, ops.CPU()} { // a GPU checkpoint loads on the CPU
			out, gotMeta, err := autograd.LoadTensorsFile(path, to)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(gotMeta, meta) {
				t.Errorf("metadata %v, want %v", gotMeta, meta)
			}
			if len(out) != len(in) {
				t.Errorf("%d tensors, want %d", len(out), len(in))
			}
			for name, want := range in {
				got := out[name]
				if got.Buf == nil || got.Buf.Device() != to || !slices.Equal(got.Shape, want.Shape) ||
					!slices.Equal(bits(t, got.Buf), bits(t, want.Buf)) {
					t.Errorf("%q does not round-trip: shape %v, want %v", name, got.Shape, want.Shape)
				}
			}
			autograd.ReleaseTensors(out)
		}

		// No metadata: no "__metadata__" key, and an empty map back.
		var w bytes.Buffer
		if err := autograd.SaveTensors(&w, map[string]autograd.NamedTensor{"scalar": in["scalar"]}, nil); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(w.String(), "__metadata__") || (w.Len()-8)%8 != 4 {
			t.Errorf("unexpected file %q", w.String())
		}
		out, gotMeta, err := autograd.LoadTensors(&w, d)
		if err != nil || gotMeta == nil || len(gotMeta) != 0 || len(out) != 1 {
			t.Errorf("got %v, %v, %v", out, gotMeta, err)
		}
		autograd.ReleaseTensors(out)
	})
}

func bits(t *testing.T, b *ops.Buffer) []uint32 {
	t.Helper()
	f, err := b.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	u := make([]uint32, len(f))
	for i, v := range f {
		u[i] = math.Float32bits(v)
	}
	return u
}

// st returns a safetensors file: the header's length, the header and the data.
func st(header string, data ...byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestLoadTensorsErrors(t *testing.T) {
	ok := `{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	eight := make([]byte, 8)
	huge := int64(1_000_000_000_000) // claimed elements: more than any machine holds
	if strconv.IntSize == 32 {
		huge = 500_000_000 // 2 GB, the most a 32-bit int can count in bytes
	}
	cases := []struct {
		name, want string
		in         []byte
	}{
		{"empty input", "header length: unexpected EOF", nil},
		{"short length", "header length: unexpected EOF", []byte{1, 0, 0}},
		{"huge header", "exceeds the limit", binary.LittleEndian.AppendUint64(nil, autograd.MaxHeaderBytes+1)},
		{"max uint64 header", "exceeds the limit", binary.LittleEndian.AppendUint64(nil, math.MaxUint64)},
		{"truncated header", "header truncated: 5 of 1000 bytes", append(binary.LittleEndian.AppendUint64(nil, 1000), "{ab}c"...)},
		{"empty header", "does not start with '{'", st("")},
		{"leading space", "does not start with '{'", st(" {}")},
		{"array header", "does not start with '{'", st("[]")},
		{"invalid utf-8", "not valid UTF-8", st("{\"\xff\":1}")},
		{"bad json", "invalid character", st(`{"x" 1}`)},
		{"unterminated", "EOF", st(`{"x":{"dtype":"F32"`)},
		{"trailing json", "after the JSON object", st(`{}  {}`)},
		{"trailing newline", "after the JSON object", st("{}\n")},
		{"duplicate tensor", `duplicate key "x"`, st(`{"x":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"x":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}`)},
		{"duplicate metadata", `duplicate key "__metadata__"`, st(`{"__metadata__":{},"__metadata__":{}}`)},
		{"duplicate metadata key", `duplicate key "k"`, st(`{"__metadata__":{"k":"a","k":"b"}}`)},
		{"duplicate field", `duplicate key "dtype"`, st(`{"x":{"dtype":"F32","dtype":"F32","shape":[0],"data_offsets":[0,0]}}`)},
		{"metadata not object", "is not an object", st(`{"__metadata__":"k"}`)},
		{"metadata number", `metadata "k": 1 is not a string`, st(`{"__metadata__":{"k":1}}`)},
		{"metadata null", `metadata "k": <nil> is not a string`, st(`{"__metadata__":{"k":null}}`)},
		{"tensor not object", `tensor "x": [ is not an object`, st(`{"x":[]}`)},
		{"unknown field", `unknown field "offsets"`, st(`{"x":{"dtype":"F32","shape":[0],"offsets":[0,0]}}`)},
		{"no dtype", "no dtype", st(`{"x":{"shape":[0],"data_offsets":[0,0]}}`)},
		{"null dtype", "dtype: <nil> is not a string", st(`{"x":{"dtype":null,"shape":[0],"data_offsets":[0,0]}}`)},
		{"no shape", "no shape", st(`{"x":{"dtype":"F32","data_offsets":[0,0]}}`)},
		{"no offsets", "no data_offsets", st(`{"x":{"dtype":"F32","shape":[0]}}`)},
		{"f8", `tensor "x": dtype "F8_E4M3" is not supported (F32, F64, F16, BF16, I64, I32, I16, I8, U8, BOOL)`,
			st(`{"x":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}`, 0, 0)},
		{"bf16 size", `shape [2] of BF16 needs 4 bytes, data_offsets [0 8] hold 8`, st(`{"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,8]}}`, 0, 0, 0, 0, 0, 0, 0, 0)},
		{"i64 past 2^24", `data of "x": element 1 of I64 is outside ±2^24`,
			st(`{"x":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}}`, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0x00, 0x01, 0, 0, 0, 0)},
		{"bool 2", `data of "x": element 0 of BOOL is 2, not 0 or 1`, st(`{"x":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}}`, 2)},
		{"shape not array", "shape: 2 is not an array", st(`{"x":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}`)},
		{"shape null", "shape: <nil> is not an array", st(`{"x":{"dtype":"F32","shape":null,"data_offsets":[0,0]}}`)},
		{"shape fraction", "2.0 is not an integer", st(`{"x":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}`)},
		{"shape exponent", "2e0 is not an integer", st(`{"x":{"dtype":"F32","shape":[2e0],"data_offsets":[0,8]}}`)},
		{"shape string", "is not an integer", st(`{"x":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}}`)},
		{"shape beyond int64", "is not an integer of 64 bits", st(`{"x":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]}}`)},
		{"negative dim", "negative dimension", st(`{"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`)},
		{"overflow", "too many elements", st(`{"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`)},
		{"overflow by 4", "too many elements", st(`{"x":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}}`)},
		{"size mismatch", "shape [3] of F32 needs 12 bytes, data_offsets [0 8] hold 8", st(`{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, eight...)},
		{"one offset", "not [begin, end]", st(`{"x":{"dtype":"F32","shape":[0],"data_offsets":[0]}}`)},
		{"three offsets", "not [begin, end]", st(`{"x":{"dtype":"F32","shape":[0],"data_offsets":[0,0,0]}}`)},
		{"negative offset", "not [begin, end]", st(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}`)},
		{"reversed offsets", "not [begin, end]", st(`{"x":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}}`)},
		{"gap at start", `"x" starts at data byte 4, want 0`, st(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight...)},
		{"gap", `"y" starts at data byte 8, want 4`, st(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, eight...)},
		{"overlap", `"y" starts at data byte 4, want 8`, st(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, eight...)},
		{"aliased", `starts at data byte 0, want 8`, st(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, eight...)},
		{"truncated data", `data of "x": unexpected EOF`, st(ok, 1, 2, 3)},
		{"no data", `data of "x": unexpected EOF`, st(ok)},
		{"huge claimed data", `data of "x": unexpected EOF`, st(fmt.Sprintf(`{"x":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}}`, huge, 4*huge), 1)},
		{"trailing garbage", "trailing bytes after the data", st(ok, append(eight, 0)...)},
		{"trailing after empty", "trailing bytes after the data", st(`{}`, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := ops.CPU().Stats().LiveBytes
			ts, meta, err := autograd.LoadTensors(bytes.NewReader(c.in), ops.CPU())
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "autograd: load tensors: ") {
				t.Errorf("got error %v, want one containing %q", err, c.want)
			}
			if ts != nil || meta != nil {
				t.Errorf("got %v, %v with the error", ts, meta)
			}
			if got := ops.CPU().Stats().LiveBytes; got != base {
				t.Errorf("live bytes %d, %d before: a failed load kept buffers", got, base)
			}
		})
	}

	// What is valid: space padding, an empty header, empty metadata, zero-length tensors
	// anywhere (even sharing an offset), a zero dimension with huge others.
	for _, in := range [][]byte{
		st(`{}`),
		st(`{}      `),
		st(`{"__metadata__":{}}`),
		st(fmt.Sprintf(`{"z":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[%d,0],"data_offsets":[0,0]}}`, 1<<(strconv.IntSize-2)), eight...),
		st(`{"a":{"shape":[],"data_offsets":[0,4],"dtype":"F32"}}  `, 1, 2, 3, 4),
	} {
		ts, meta, err := autograd.LoadTensors(bytes.NewReader(in), ops.CPU())
		if err != nil || meta == nil {
			t.Errorf("%q: %v", in, err)
		}
		autograd.ReleaseTensors(ts)
	}
	if _, _, err := autograd.LoadTensors(bytes.NewReader(st(`{}`)), nil); err == nil {
		t.Error("a nil device gave no error")
	}
	if _, _, err := autograd.LoadTensorsFile(filepath.Join(t.TempDir(), "missing"), ops.CPU()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	var r errReader
	if _, _, err := autograd.LoadTensors(r, ops.CPU()); !errors.Is(err, errBroken) {
		t.Errorf("reader error: %v", err)
	}
}

var errBroken = errors.New("broken")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

// errWriter fails after n bytes.
type errWriter struct{ n int }

func (w *errWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errBroken
	}
	w.n -= len(p)
	return len(p), nil
}

// shortWriter writes one byte less than asked, without an error (breaking io.Writer's contract).
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return max(len(p)-1, 0), nil }

func TestSaveTensorsErrors(t *testing.T) {
	d := ops.CPU()
	two := upload(t, d, 1, 2)
	defer two.Release()
	gone := upload(t, d, 1)
	gone.Release()
	one := func(name string, shape []int, b *ops.Buffer) map[string]autograd.NamedTensor {
		return map[string]autograd.NamedTensor{"ok": {Shape: []int{2}, Buf: two}, name: {Shape: shape, Buf: b}}
	}
	cases := []struct {
		name, want string
		ts         map[string]autograd.NamedTensor
		meta       map[string]string
	}{
		{"empty name", `invalid tensor name ""`, one("", []int{2}, two), nil},
		{"reserved name", `invalid tensor name "__metadata__"`, one("__metadata__", []int{2}, two), nil},
		{"invalid utf-8 name", `invalid tensor name "\xff"`, one("\xff", []int{2}, two), nil},
		{"invalid utf-8 metadata", `metadata "k": not valid UTF-8`, nil, map[string]string{"k": "\xff"}},
		{"negative dim", "negative dimension", one("x", []int{-1}, two), nil},
		{"wrong length", "buffer of 2 elements for shape [3]", one("x", []int{3}, two), nil},
		{"nil buffer", "nil buffer", one("x", []int{0}, nil), nil},
		{"released buffer", "released", one("x", []int{1}, gone), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var w bytes.Buffer
			err := autograd.SaveTensors(&w, c.ts, c.meta)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "autograd: save tensors: ") {
				t.Errorf("got error %v, want one containing %q", err, c.want)
			}
			if w.Len() != 0 {
				t.Errorf("wrote %d bytes before failing", w.Len())
			}
		})
	}
	ok := map[string]autograd.NamedTensor{"ok": {Shape: []int{2}, Buf: two}}
	for _, n := range []int{0, 4, 8, 70} { // in the length, the header, the data
		if err := autograd.SaveTensors(&errWriter{n}, ok, nil); !errors.Is(err, errBroken) {
			t.Errorf("writer failing after %d bytes: %v", n, err)
		}
	}
	if err := autograd.SaveTensors(shortWriter{}, ok, nil); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("a writer that writes less without an error: %v, want io.ErrShortWrite", err)
	}
	// A failed file save leaves neither the file nor a temporary.
	dir := t.TempDir()
	if err := autograd.SaveTensorsFile(filepath.Join(dir, "x.safetensors"), one("x", []int{1}, gone), nil); err == nil {
		t.Error("no error")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a failed save left %v", ents)
	}
	if err := autograd.SaveTensorsFile(filepath.Join(dir, "no", "such", "dir"), ok, nil); err == nil {
		t.Error("no error for a missing directory")
	}
}

// FuzzLoadTensors feeds arbitrary bytes to LoadTensors: it must never panic, never hold more
// float32 values than the input has bytes for, and what it accepts must survive a save and a
// reload unchanged. `go test` replays the seeds; `go test -fuzz FuzzLoadTensors` explores.
func FuzzLoadTensors(f *testing.F) {
	f.Add([]byte(handMade))
	f.Add([]byte(handMade[:len(handMade)-1]))
	f.Add([]byte(handMade + "x"))
	f.Add(st(`{}`))
	f.Add(st(`{"__metadata__":{"a":"b"}}  `))
	f.Add(st(`{"x":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]}}`, 1, 2, 3, 4))
	f.Add(st(`{"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, 1, 2, 3, 4))
	f.Add(st(`{"x":{"dtype":"F32","shape":[1000000000000],"data_offsets":[0,4000000000000]}}`, 1))
	f.Add(st(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`))
	f.Add(binary.LittleEndian.AppendUint64(nil, 1<<40))
	f.Add([]byte{})
	f.Add(st(`{"x":{"dtype":"U8","shape":[1000],"data_offsets":[0,1000]}}`, make([]byte, 1000)...))
	f.Fuzz(func(t *testing.T, in []byte) {
		d := ops.CPU()
		base := d.Stats().LiveBytes
		ts, meta, err := autograd.LoadTensors(bytes.NewReader(in), d)
		if err != nil {
			if ts != nil || meta != nil || d.Stats().LiveBytes != base {
				t.Fatalf("error %v with results or live buffers", err)
			}
			return
		}
		defer autograd.ReleaseTensors(ts)
		// A float32 per element: 4 bytes for each byte of a 1-byte dtype (U8, I8, BOOL) at most.
		if grown := d.Stats().LiveBytes - base; grown > 4*int64(len(in)) {
			t.Fatalf("%d input bytes gave %d bytes of tensors", len(in), grown)
		}
		var w bytes.Buffer
		if err := autograd.SaveTensors(&w, ts, meta); err != nil {
			t.Fatalf("loaded tensors do not save: %v", err)
		}
		ts2, meta2, err := autograd.LoadTensors(&w, d)
		if err != nil {
			t.Fatalf("saved tensors do not load: %v", err)
		}
		defer autograd.ReleaseTensors(ts2)
		if !maps.Equal(meta, meta2) || len(ts) != len(ts2) {
			t.Fatalf("metadata or tensor count changed: %v, %v", meta, meta2)
		}
		for name, a := range ts {
			b := ts2[name]
			if b.Buf == nil || !slices.Equal(a.Shape, b.Shape) || !slices.Equal(bits(t, a.Buf), bits(t, b.Buf)) {
				t.Fatalf("%q changed in a save and reload", name)
			}
		}
	})
}

// TestLoadTensorsDtypes: the other safetensors element types load as float32: halves and
// bfloat16s exactly (subnormals, infinities and NaN included), doubles rounded to nearest,
// integers and booleans as their values.
func TestLoadTensorsDtypes(t *testing.T) {
	type tensor struct {
		dtype string
		data  []byte
		want  []float32
	}
	le := func(size int, vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			for k := range size {
				b = append(b, byte(v>>(8*k)))
			}
		}
		return b
	}
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	ts := []tensor{
		{"F16", le(2, 0x3c00, 0xc000, 0x0001, 0x8000, 0x7c00, 0x7bff, 0x7e00), []float32{1, -2, 0x1p-24, float32(math.Copysign(0, -1)), inf, 65504, nan}},
		{"BF16", le(2, 0x3f80, 0xbfc0, 0x7f80), []float32{1, -1.5, inf}},
		{"F64", le(8, math.Float64bits(0.1), math.Float64bits(-3)), []float32{0.1, -3}},
		{"I64", le(8, uint64(1<<63|(1<<63-1)), 1<<24), []float32{-1, 1 << 24}}, // -1 as two's complement
		{"I32", le(4, 0xffffff85, 7), []float32{-123, 7}},
		{"I16", le(2, 0x8000), []float32{-32768}},
		{"I8", le(1, 0xff, 5), []float32{-1, 5}},
		{"U8", le(1, 0xff), []float32{255}},
		{"BOOL", le(1, 0, 1), []float32{0, 1}},
	}
	var hdr strings.Builder
	var data []byte
	hdr.WriteString("{")
	for i, x := range ts {
		if i > 0 {
			hdr.WriteString(",")
		}
		fmt.Fprintf(&hdr, `"t%d":{"dtype":"%s","shape":[%d],"data_offsets":[%d,%d]}`, i, x.dtype, len(x.want), len(data), len(data)+len(x.data))
		data = append(data, x.data...)
	}
	hdr.WriteString("}")
	got, _, err := autograd.LoadTensors(bytes.NewReader(st(hdr.String(), data...)), ops.CPU())
	if err != nil {
		t.Fatal(err)
	}
	defer autograd.ReleaseTensors(got)
	for i, x := range ts {
		v, err := got[fmt.Sprintf("t%d", i)].Buf.Float32s()
		same := err == nil && slices.EqualFunc(v, x.want, func(a, b float32) bool {
			return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
		})
		if !same {
			t.Errorf("%s: loaded %v, %v; want %v", x.dtype, v, err, x.want)
		}
	}
}
