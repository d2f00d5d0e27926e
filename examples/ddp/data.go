package main

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// dataset is one split of Fashion-MNIST: n images of 784 pixels in [0, 1] and their classes.
type dataset struct {
	n int
	x []float32
	y []int
}

// loadData reads the training and test splits from dir (IDX files, gzip-compressed with a .gz
// suffix or plain).
func loadData(dir string) (train, test *dataset, err error) {
	if dir == "" {
		dir = defaultData()
	}
	if train, err = loadSplit(dir, "train"); err == nil {
		test, err = loadSplit(dir, "t10k")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("ddp: reading Fashion-MNIST from %s (run from the repository root, or pass -data): %w", dir, err)
	}
	return train, test, nil
}

func loadSplit(dir, prefix string) (*dataset, error) {
	idims, images, err := readIDX(filepath.Join(dir, prefix+"-images-idx3-ubyte"))
	if err != nil {
		return nil, err
	}
	ldims, labels, err := readIDX(filepath.Join(dir, prefix+"-labels-idx1-ubyte"))
	if err != nil {
		return nil, err
	}
	if len(idims) != 3 || len(ldims) != 1 || idims[0] != ldims[0] || idims[1]*idims[2] != 784 {
		return nil, fmt.Errorf("%s: images %v and labels %v (want (n, 28, 28) and (n))", prefix, idims, ldims)
	}
	d := &dataset{n: ldims[0], x: make([]float32, len(images)), y: make([]int, len(labels))}
	for i, p := range images {
		d.x[i] = float32(p) / 255
	}
	for i, l := range labels {
		if l > 9 {
			return nil, fmt.Errorf("%s: label %d", prefix, l)
		}
		d.y[i] = int(l)
	}
	return d, nil
}

// readIDX reads path.gz, or path: the bytes 0, 0, 8 (unsigned bytes), the number of dimensions,
// each dimension as a big-endian uint32, then the values.
func readIDX(path string) ([]int, []byte, error) {
	f, err := os.Open(path + ".gz")
	var r io.Reader = f
	if errors.Is(err, os.ErrNotExist) {
		f, err = os.Open(path)
		r = f
	} else if err == nil {
		zr, zerr := gzip.NewReader(f)
		if zerr != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s.gz: %w", path, zerr)
		}
		r = zr
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	br := bufio.NewReader(r)
	var head [4]byte
	if _, err := io.ReadFull(br, head[:]); err != nil || head[0] != 0 || head[1] != 0 || head[2] != 8 || head[3] < 1 || head[3] > 3 {
		return nil, nil, fmt.Errorf("%s: not an IDX file of unsigned bytes", path)
	}
	dims := make([]int, head[3])
	size := 1
	for i := range dims {
		var v uint32
		if err := binary.Read(br, binary.BigEndian, &v); err != nil || v > 1<<24 {
			return nil, nil, fmt.Errorf("%s: bad dimension", path)
		}
		dims[i] = int(v)
		size *= int(v)
	}
	if size > 1<<28 {
		return nil, nil, fmt.Errorf("%s: %d values", path, size)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(br, data); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return dims, data, nil
}
