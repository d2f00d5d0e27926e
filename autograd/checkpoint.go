package autograd

// Checkpoints in the safetensors format (https://github.com/huggingface/safetensors):
//
//	8 bytes   N, the header length, unsigned little-endian
//	N bytes   a JSON object, UTF-8, starting with '{', padded with spaces (0x20):
//	          {"__metadata__": {"key": "value", ...},               (optional, strings only)
//	           "name": {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}, ...}
//	rest      the data: each tensor's row-major float32 values, little-endian, at bytes
//	          [begin, end) counted from the end of the header
//
// The file is device-neutral: a checkpoint saved from a GPU loads on the CPU and vice versa.

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/torchlean-go/torchlean/ops"
)

// NamedTensor is one tensor of a checkpoint: a row-major shape and a buffer holding exactly
// product(Shape) elements (a scalar has the empty shape). Its name is its key in the map passed
// to SaveTensors or returned by LoadTensors.
type NamedTensor struct {
	Shape []int       // row-major; empty for a scalar
	Buf   *ops.Buffer // product(Shape) elements
}

// MaxHeaderBytes is the largest safetensors header LoadTensors accepts (the limit of the
// reference implementation).
const MaxHeaderBytes = 100_000_000

const metadataKey = "__metadata__"

// SaveTensors writes tensors and metadata to w in the safetensors format with dtype F32.
// The layout is deterministic: tensors sorted by name, their data contiguous in that order,
// header keys in that order after "__metadata__" (omitted when metadata is empty), metadata keys
// sorted, the header padded with spaces to a multiple of 8 bytes. Names and metadata must be
// valid UTF-8; a name must be non-empty and not "__metadata__". Every tensor is checked before
// anything is written; each is then downloaded from its device in turn. The buffers are borrowed.
func SaveTensors(w io.Writer, tensors map[string]NamedTensor, metadata map[string]string) error {
	names := slices.Sorted(maps.Keys(tensors))
	var hdr bytes.Buffer
	hdr.WriteByte('{')
	if len(metadata) > 0 {
		hdr.WriteString(`"` + metadataKey + `":{`)
		for i, k := range slices.Sorted(maps.Keys(metadata)) {
			v := metadata[k]
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return fmt.Errorf("autograd: save tensors: metadata %q: not valid UTF-8", k)
			}
			if i > 0 {
				hdr.WriteByte(',')
			}
			writeJSONString(&hdr, k)
			hdr.WriteByte(':')
			writeJSONString(&hdr, v)
		}
		hdr.WriteByte('}')
	}
	var off int64
	for i, name := range names {
		t := tensors[name]
		if name == "" || name == metadataKey || !utf8.ValidString(name) {
			return fmt.Errorf("autograd: save tensors: invalid tensor name %q", name)
		}
		n, err := numel(t.Shape)
		if err != nil {
			return fmt.Errorf("autograd: save tensors: %q: %w", name, err)
		}
		if err := live(t.Buf); err != nil {
			return fmt.Errorf("autograd: save tensors: %q: %w", name, err)
		}
		if t.Buf.Len() != n {
			return fmt.Errorf("autograd: save tensors: %q: buffer of %d elements for shape %v", name, t.Buf.Len(), t.Shape)
		}
		if i > 0 || len(metadata) > 0 {
			hdr.WriteByte(',')
		}
		writeJSONString(&hdr, name)
		hdr.WriteString(`:{"dtype":"F32","shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				hdr.WriteByte(',')
			}
			hdr.WriteString(strconv.Itoa(d))
		}
		end := off + 4*int64(n)
		fmt.Fprintf(&hdr, `],"data_offsets":[%d,%d]}`, off, end)
		off = end
	}
	hdr.WriteByte('}')
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}

	var head [8]byte
	binary.LittleEndian.PutUint64(head[:], uint64(hdr.Len()))
	if err := writeAll(w, head[:]); err != nil {
		return err
	}
	if err := writeAll(w, hdr.Bytes()); err != nil {
		return err
	}
	var chunk []byte
	for _, name := range names {
		data, err := tensors[name].Buf.Float32s()
		if err != nil {
			return fmt.Errorf("autograd: save tensors: %q: %w", name, err)
		}
		for len(data) > 0 { // encode and write at most 64 KiB at a time
			k := min(len(data), 1<<14)
			chunk = chunk[:0]
			for _, v := range data[:k] {
				chunk = binary.LittleEndian.AppendUint32(chunk, math.Float32bits(v))
			}
			if err := writeAll(w, chunk); err != nil {
				return err
			}
			data = data[k:]
		}
	}
	return nil
}

// writeAll writes b to w; a short write without an error (a writer breaking io.Writer's
// contract) is io.ErrShortWrite.
func writeAll(w io.Writer, b []byte) error {
	n, err := w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("autograd: save tensors: %w", err)
	}
	return nil
}

// writeJSONString writes s as a JSON string (without escaping <, > and &).
func writeJSONString(b *bytes.Buffer, s string) {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	e.Encode(s) // cannot fail for a string; it appends a newline
	b.Truncate(b.Len() - 1)
}

// LoadTensors reads a safetensors stream written by SaveTensors, or any safetensors file (a
// PyTorch state_dict saved with safetensors, a BF16 checkpoint), and uploads each tensor to dev
// as float32: F32 as stored, F16 and BF16 exactly, F64 rounded to nearest, and the integer types
// I64, I32, I16, I8, U8 and BOOL (e.g. BatchNorm's num_batches_tracked) when each value is exact
// as a float32 (|v| <= 2^24; BOOL 0 or 1), else an error. It returns the tensors by name and the
// metadata (an empty map when there is none); the caller owns the buffers (ReleaseTensors).
//
// The input is validated completely: the header length (at most MaxHeaderBytes), UTF-8 JSON
// starting with '{' and followed only by spaces, no duplicate keys at any level, no unknown
// fields, metadata values strings, one of those dtypes (others are an error naming the dtype),
// shapes of non-negative integers whose product times the element size is the tensor's byte
// length without overflow, data offsets that cover the data section exactly (contiguous, no gap,
// no overlap), and no bytes after the data. Memory use is bounded by the input actually read, whatever the header
// claims. On error no buffer stays allocated.
func LoadTensors(r io.Reader, dev *ops.Device) (map[string]NamedTensor, map[string]string, error) {
	if dev == nil {
		return nil, nil, errors.New("autograd: load tensors: nil device")
	}
	var head [8]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, nil, fmt.Errorf("autograd: load tensors: reading the header length: %w", eofIsUnexpected(err))
	}
	n := binary.LittleEndian.Uint64(head[:])
	if n > MaxHeaderBytes {
		return nil, nil, fmt.Errorf("autograd: load tensors: not a safetensors file? its header of %d bytes exceeds the limit of %d", n, MaxHeaderBytes)
	}
	hdr, err := io.ReadAll(io.LimitReader(r, int64(n))) // grows with what arrives, not with n
	if err != nil {
		return nil, nil, fmt.Errorf("autograd: load tensors: reading the header: %w", err)
	}
	if uint64(len(hdr)) != n {
		return nil, nil, fmt.Errorf("autograd: load tensors: header truncated: %d of %d bytes", len(hdr), n)
	}
	entries, meta, err := parseHeader(hdr)
	if err != nil {
		return nil, nil, fmt.Errorf("autograd: load tensors: header: %w", err)
	}

	out := make(map[string]NamedTensor, len(entries))
	fail := func(err error) (map[string]NamedTensor, map[string]string, error) {
		ReleaseTensors(out)
		return nil, nil, fmt.Errorf("autograd: load tensors: %w", err)
	}
	scratch := make([]byte, 1<<15)
	for _, e := range entries { // in data order
		data, err := readFloats(r, e.dtype, int((e.end-e.begin)/int64(e.dtype.size)), scratch)
		if err != nil {
			return fail(fmt.Errorf("data of %q: %w", e.name, eofIsUnexpected(err)))
		}
		buf, err := ops.FromFloat32(dev, data)
		if err != nil {
			return fail(fmt.Errorf("%q: %w", e.name, err))
		}
		out[e.name] = NamedTensor{Shape: e.shape, Buf: buf}
	}
	switch k, err := io.ReadFull(r, scratch[:1]); {
	case k > 0:
		return fail(errors.New("trailing bytes after the data"))
	case err != io.EOF:
		return fail(fmt.Errorf("after the data: %w", err))
	}
	return out, meta, nil
}

// ReleaseTensors releases the buffer of every tensor in ts.
func ReleaseTensors(ts map[string]NamedTensor) {
	for _, t := range ts {
		t.Buf.Release()
	}
}

// SaveTensorsFile writes a safetensors file at path (SaveTensors). It writes a temporary file
// in the same directory, syncs it and renames it over path (then syncs the directory where the
// system allows it), so path never holds a partial checkpoint. A new file gets the permissions
// os.Create gives (0666 less the umask); a file replaced keeps its permissions.
func SaveTensorsFile(path string, tensors map[string]NamedTensor, metadata map[string]string) (err error) {
	fail := func(err error) error { return fmt.Errorf("autograd: save tensors: %w", err) }
	perm, keep := os.FileMode(0o666), false
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		perm, keep = fi.Mode().Perm(), true
	}
	dir := filepath.Dir(path)
	f, err := createTemp(dir, "."+filepath.Base(path)+".", ".tmp", perm)
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	if err := SaveTensors(w, tensors, metadata); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if keep { // the replaced file's permissions, whatever the umask
		if err := f.Chmod(perm); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fail(err)
	}
	if d, err := os.Open(dir); err == nil { // the rename itself durable (not possible everywhere)
		d.Sync()
		d.Close()
	}
	return nil
}

// createTemp creates a new file dir/prefix<random>suffix with the permissions perm less the
// umask (os.CreateTemp's are 0600).
func createTemp(dir, prefix, suffix string, perm os.FileMode) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36)+suffix)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no unused temporary name in %s", dir)
}

// LoadTensorsFile reads the safetensors file at path onto dev (LoadTensors).
func LoadTensorsFile(path string, dev *ops.Device) (map[string]NamedTensor, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("autograd: load tensors: %w", err)
	}
	defer f.Close()
	return LoadTensors(bufio.NewReaderSize(f, 1<<20), dev)
}

// entry is one tensor of a parsed header.
type entry struct {
	name       string
	shape      []int
	dtype      dtype
	begin, end int64 // byte offsets in the data section
}

// dtype is a safetensors element type that LoadTensors converts to float32: its name, size in
// bytes, and the value of one little-endian element (ok false: not exact as a float32 where the
// type is an integer, or not 0 or 1 for BOOL).
type dtype struct {
	name string
	size int
	conv func(b []byte) (v float32, ok bool)
}

// dtypes are the element types LoadTensors reads: floats are rounded to float32 (F64 to
// nearest; F16 and BF16 exactly), integers and booleans must be exact as float32s (|v| <= 2^24).
var dtypes = map[string]dtype{
	"F32": {"F32", 4, func(b []byte) (float32, bool) { return math.Float32frombits(binary.LittleEndian.Uint32(b)), true }},
	"F64": {"F64", 8, func(b []byte) (float32, bool) {
		return float32(math.Float64frombits(binary.LittleEndian.Uint64(b))), true
	}},
	"F16": {"F16", 2, func(b []byte) (float32, bool) { return halfToFloat32(binary.LittleEndian.Uint16(b)), true }},
	"BF16": {"BF16", 2, func(b []byte) (float32, bool) {
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16), true
	}},
	"I64":  {"I64", 8, func(b []byte) (float32, bool) { return exactInt(int64(binary.LittleEndian.Uint64(b))) }},
	"I32":  {"I32", 4, func(b []byte) (float32, bool) { return exactInt(int64(int32(binary.LittleEndian.Uint32(b)))) }},
	"I16":  {"I16", 2, func(b []byte) (float32, bool) { return float32(int16(binary.LittleEndian.Uint16(b))), true }},
	"I8":   {"I8", 1, func(b []byte) (float32, bool) { return float32(int8(b[0])), true }},
	"U8":   {"U8", 1, func(b []byte) (float32, bool) { return float32(b[0]), true }},
	"BOOL": {"BOOL", 1, func(b []byte) (float32, bool) { return float32(b[0]), b[0] <= 1 }},
}

// exactInt returns v as a float32, and whether that is exact (|v| <= 2^24).
func exactInt(v int64) (float32, bool) { return float32(v), v >= -1<<24 && v <= 1<<24 }

// halfToFloat32 returns the IEEE binary16 value h as a float32 (exactly: every half is a float32).
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp, mant := uint32(h>>10)&0x1f, uint32(h)&0x3ff
	switch {
	case exp == 0x1f: // ±Inf, NaN (payload kept)
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0: // ±0 and subnormals: mant * 2^-24
		return math.Float32frombits(sign | math.Float32bits(float32(mant)*0x1p-24))
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// parseHeader validates a header and returns its tensors in data order and its metadata.
func parseHeader(h []byte) ([]entry, map[string]string, error) {
	if len(h) == 0 || h[0] != '{' {
		return nil, nil, errors.New("does not start with '{'")
	}
	if !utf8.Valid(h) {
		return nil, nil, errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(h))
	dec.UseNumber()
	var entries []entry
	meta := map[string]string{}
	err := object(dec, func(key string) error {
		if key == metadataKey {
			return object(dec, func(k string) error {
				v, err := jsonString(dec)
				if err != nil {
					return fmt.Errorf("metadata %q: %w", k, err)
				}
				meta[k] = v
				return nil
			})
		}
		e, err := parseEntry(dec)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", key, err)
		}
		e.name = key
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if rest := h[dec.InputOffset():]; len(bytes.Trim(rest, " ")) != 0 {
		return nil, nil, errors.New("bytes other than space padding after the JSON object")
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.end, b.end), cmp.Compare(a.name, b.name))
	})
	var pos int64
	for _, e := range entries {
		if e.begin != pos {
			return nil, nil, fmt.Errorf("tensor %q starts at data byte %d, want %d (tensors must cover the data contiguously, without gaps or overlaps)",
				e.name, e.begin, pos)
		}
		pos = e.end
	}
	return entries, meta, nil
}

// parseEntry reads one tensor description {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}.
func parseEntry(dec *json.Decoder) (entry, error) {
	var e entry
	var dtype string
	var shape, offs []int64
	var haveShape, haveOffs bool
	err := object(dec, func(key string) (err error) {
		switch key {
		case "dtype":
			dtype, err = jsonString(dec)
		case "shape":
			shape, err = jsonInts(dec)
			haveShape = true
		case "data_offsets":
			offs, err = jsonInts(dec)
			haveOffs = true
		default:
			return fmt.Errorf("unknown field %q", key)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
	switch {
	case err != nil:
		return e, err
	case dtype == "":
		return e, errors.New("no dtype")
	case dtypes[dtype].size == 0:
		return e, fmt.Errorf("dtype %q is not supported (F32, F64, F16, BF16, I64, I32, I16, I8, U8, BOOL)", dtype)
	case !haveShape:
		return e, errors.New("no shape")
	case !haveOffs:
		return e, errors.New("no data_offsets")
	case len(offs) != 2 || offs[0] < 0 || offs[0] > offs[1]:
		return e, fmt.Errorf("data_offsets %v are not [begin, end] with 0 <= begin <= end", offs)
	}
	// The element count, with numel's overflow checks (4*count fits an int).
	e.shape = make([]int, len(shape))
	for i, d := range shape {
		if int64(int(d)) != d {
			return e, fmt.Errorf("shape %v has too many elements", shape)
		}
		e.shape[i] = int(d)
	}
	n, err := numel(e.shape)
	if err != nil {
		return e, err
	}
	count := int64(n)
	e.dtype = dtypes[dtype]
	e.begin, e.end = offs[0], offs[1]
	if size := int64(e.dtype.size); e.end-e.begin != size*count {
		return e, fmt.Errorf("shape %v of %s needs %d bytes, data_offsets %v hold %d", shape, dtype, size*count, offs, e.end-e.begin)
	}
	return e, nil
}

// object reads a JSON object, calling f with the decoder positioned at the value of each key.
// Duplicate keys are an error.
func object(dec *json.Decoder, f func(key string) error) error {
	if tok, err := dec.Token(); err != nil {
		return err
	} else if tok != json.Delim('{') {
		return fmt.Errorf("%v is not an object", tok)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("object key %v", tok)
		}
		if seen[key] {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		if err := f(key); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// jsonString reads a JSON string (null or any other kind of value is an error).
func jsonString(dec *json.Decoder) (string, error) {
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%v is not a string", v)
	}
	return s, nil
}

// jsonInts reads a JSON array of integers that fit an int64 (written without fraction or
// exponent).
func jsonInts(dec *json.Decoder) ([]int64, error) {
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%v is not an array", v)
	}
	out := make([]int64, len(arr))
	for i, x := range arr {
		num, ok := x.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%v is not an integer", x)
		}
		n, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not an integer of 64 bits", num)
		}
		out[i] = n
	}
	return out, nil
}

// readFloats reads n little-endian elements of type t as float32s, through scratch (a multiple
// of 8 bytes). The result grows as data arrives, so a short input never causes a large
// allocation.
func readFloats(r io.Reader, t dtype, n int, scratch []byte) ([]float32, error) {
	out := make([]float32, 0, min(n, len(scratch)/t.size))
	per := len(scratch) / 8 * 8 // a whole number of elements of every size
	for len(out) < n {
		k := min(per, t.size*(n-len(out)))
		if _, err := io.ReadFull(r, scratch[:k]); err != nil {
			return nil, err
		}
		for i := 0; i < k; i += t.size {
			v, ok := t.conv(scratch[i : i+t.size])
			if !ok && t.name == "BOOL" {
				return nil, fmt.Errorf("element %d of BOOL is %d, not 0 or 1", len(out), scratch[i])
			}
			if !ok {
				return nil, fmt.Errorf("element %d of %s is outside ±2^24, the integers that are all exact in float32", len(out), t.name)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// eofIsUnexpected reports a clean end of input met before a required part as a truncation.
func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
