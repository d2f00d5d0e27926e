package main

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Classes are the names of the ten Fashion-MNIST labels.
var Classes = [10]string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// Dataset is a set of labelled grayscale images.
type Dataset struct {
	Rows, Cols int
	Images     []float32 // Len() images of Rows*Cols pixels, row-major, scaled to [0, 1]
	Labels     []int     // in [0, 10)
}

// DebianDir is where Debian's dataset-fashion-mnist package installs the full data set
// (gzip-compressed IDX files).
const DebianDir = "/usr/share/datasets/fashion-mnist"

// loadData returns the training and test sets and says where they come from: the embedded subset
// when dir is "embedded", the IDX files in dir when dir is another non-empty string, else the
// full set when Debian's package is installed, else the embedded subset.
func loadData(dir string, embedded fs.FS) (train, test *Dataset, source string, err error) {
	var fsys fs.FS
	switch {
	case dir == "embedded":
		fsys, source = embedded, "embedded subset"
	case dir != "":
		fsys, source = os.DirFS(dir), dir
	case exists(DebianDir):
		fsys, source = os.DirFS(DebianDir), DebianDir
	default:
		fsys, source = embedded, "embedded subset (apt-get install dataset-fashion-mnist, or -data DIR, for the full set)"
	}
	if train, err = loadSplit(fsys, "train"); err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", source, err)
	}
	if test, err = loadSplit(fsys, "t10k"); err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", source, err)
	}
	if train.Rows != test.Rows || train.Cols != test.Cols {
		return nil, nil, "", fmt.Errorf("training images are %dx%d, test images %dx%d", train.Rows, train.Cols, test.Rows, test.Cols)
	}
	return train, test, source, nil
}

// exists reports whether the training images are in dir.
func exists(dir string) bool {
	_, err := os.Stat(dir + "/train-images-idx3-ubyte.gz")
	return err == nil
}

// Len returns the number of images.
func (d *Dataset) Len() int { return len(d.Labels) }

// Pixels returns the number of pixels of one image.
func (d *Dataset) Pixels() int { return d.Rows * d.Cols }

// The IDX format (http://yann.lecun.com/exdb/mnist/): the bytes 0, 0, a type code (8 for unsigned
// bytes, the only one read here) and the number of dimensions; each dimension as a big-endian
// uint32; then the values, row-major. Files may be gzip-compressed.
const idxUbyte = 0x08

// maxIDXBytes bounds the data of one IDX file (the Fashion-MNIST training images are 47 MB).
const maxIDXBytes = 1 << 30

// readIDX reads an IDX file of unsigned bytes, gzip-compressed or plain. It returns the
// dimensions and the data, which must be exactly as long as the dimensions say.
func readIDX(r io.Reader) (dims []int, data []byte, err error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("idx: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, nil, fmt.Errorf("idx: reading the magic number: %w", unexpected(err))
	}
	if head[0] != 0 || head[1] != 0 {
		return nil, nil, fmt.Errorf("idx: bad magic number % x (want 00 00 type dims)", head)
	}
	if head[2] != idxUbyte {
		return nil, nil, fmt.Errorf("idx: element type 0x%02x not supported (want 0x08, unsigned bytes)", head[2])
	}
	if head[3] == 0 {
		return nil, nil, errors.New("idx: no dimensions")
	}
	dims = make([]int, head[3])
	n := int64(1)
	for i := range dims {
		var d [4]byte
		if _, err := io.ReadFull(r, d[:]); err != nil {
			return nil, nil, fmt.Errorf("idx: reading the dimensions: %w", unexpected(err))
		}
		dims[i] = int(binary.BigEndian.Uint32(d[:]))
		if n *= int64(dims[i]); n > maxIDXBytes {
			return nil, nil, fmt.Errorf("idx: dimensions %v exceed %d bytes", dims[:i+1], maxIDXBytes)
		}
	}
	// Read one byte more than needed to detect trailing data; memory grows with the input.
	data, err = io.ReadAll(io.LimitReader(r, n+1))
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("idx: reading the data: %w", err)
	case int64(len(data)) < n:
		return nil, nil, fmt.Errorf("idx: truncated: %d of %d data bytes for dimensions %v", len(data), n, dims)
	case int64(len(data)) > n:
		return nil, nil, fmt.Errorf("idx: data continue past the %d bytes of dimensions %v", n, dims)
	}
	return dims, data, nil
}

// writeIDX writes an IDX file of unsigned bytes (uncompressed).
func writeIDX(w io.Writer, dims []int, data []byte) error {
	head := []byte{0, 0, idxUbyte, byte(len(dims))}
	n := 1
	for _, d := range dims {
		head = binary.BigEndian.AppendUint32(head, uint32(d))
		n *= d
	}
	if len(dims) == 0 || len(dims) > 255 || n != len(data) {
		return fmt.Errorf("idx: %d bytes for dimensions %v", len(data), dims)
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	_, err := w.Write(data)
	return err
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// loadSplit reads one split of the data set from fsys: <prefix>-images-idx3-ubyte and
// <prefix>-labels-idx1-ubyte, each gzip-compressed with a .gz suffix or plain without.
// prefix is "train" or "t10k".
func loadSplit(fsys fs.FS, prefix string) (*Dataset, error) {
	idims, images, err := readIDXFile(fsys, prefix+"-images-idx3-ubyte")
	if err != nil {
		return nil, err
	}
	ldims, labels, err := readIDXFile(fsys, prefix+"-labels-idx1-ubyte")
	if err != nil {
		return nil, err
	}
	if len(idims) != 3 || len(ldims) != 1 || idims[0] != ldims[0] {
		return nil, fmt.Errorf("%s: images %v and labels %v do not match (want (n, rows, cols) and (n))", prefix, idims, ldims)
	}
	ds := &Dataset{Rows: idims[1], Cols: idims[2], Images: make([]float32, len(images)), Labels: make([]int, len(labels))}
	for i, p := range images {
		ds.Images[i] = float32(p) / 255
	}
	for i, l := range labels {
		if int(l) >= len(Classes) {
			return nil, fmt.Errorf("%s: label %d of image %d is not a class", prefix, l, i)
		}
		ds.Labels[i] = int(l)
	}
	return ds, nil
}

// readIDXFile reads name.gz from fsys, or name when there is no name.gz.
func readIDXFile(fsys fs.FS, name string) ([]int, []byte, error) {
	f, err := fsys.Open(name + ".gz")
	if errors.Is(err, fs.ErrNotExist) {
		f, err = fsys.Open(name)
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	dims, data, err := readIDX(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return dims, data, nil
}
