package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

func idxBytes(t *testing.T, dims []int, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := writeIDX(&b, dims, data); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestReadIDX(t *testing.T) {
	data := []byte{0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255}
	file := idxBytes(t, []int{2, 3, 2}, data)
	if want := "\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x02"; string(file[:16]) != want {
		t.Fatalf("header % x, want % x", file[:16], want)
	}
	for name, in := range map[string][]byte{"plain": file, "gzip": gz(t, file)} {
		dims, got, err := readIDX(bytes.NewReader(in))
		if err != nil || len(dims) != 3 || dims[0] != 2 || dims[1] != 3 || dims[2] != 2 || !bytes.Equal(got, data) {
			t.Errorf("%s: got %v %v %v", name, dims, got, err)
		}
	}

	cases := []struct {
		name, want string
		in         []byte
	}{
		{"empty", "magic number: unexpected EOF", nil},
		{"short magic", "magic number: unexpected EOF", []byte{0, 0, 8}},
		{"wrong magic", "bad magic number", []byte{0x13, 0x37, 8, 1, 0, 0, 0, 0}},
		{"mnist float type", "element type 0x0d not supported", []byte{0, 0, 0x0d, 1, 0, 0, 0, 0}},
		{"no dims", "no dimensions", []byte{0, 0, 8, 0}},
		{"truncated dims", "dimensions: unexpected EOF", []byte{0, 0, 8, 2, 0, 0, 0, 1, 0, 0}},
		{"truncated data", "truncated: 11 of 12 data bytes", file[:len(file)-1]},
		{"truncated gzip", "unexpected EOF", gz(t, file)[:30]},
		{"bad gzip", "gzip: invalid header", []byte{0x1f, 0x8b, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"trailing data", "data continue past the 12 bytes", append(bytes.Clone(file), 9)},
		{"huge dims", "exceed", []byte{0, 0, 8, 3, 0, 0, 0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0, 0xff, 0xff}},
	}
	for _, c := range cases {
		if _, _, err := readIDX(bytes.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "idx: ") {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if err := writeIDX(&bytes.Buffer{}, []int{2, 2}, data); err == nil {
		t.Error("writeIDX accepted data of the wrong length")
	}
}

// split returns the IDX files of a split of n images (rows x cols) with the given labels.
func split(t *testing.T, fsys fstest.MapFS, prefix string, n, rows, cols int, labels []byte, compress bool) {
	pix := make([]byte, n*rows*cols)
	for i := range pix {
		pix[i] = byte(i)
	}
	img, lab := idxBytes(t, []int{n, rows, cols}, pix), idxBytes(t, []int{len(labels)}, labels)
	suffix := ""
	if compress {
		img, lab, suffix = gz(t, img), gz(t, lab), ".gz"
	}
	fsys[prefix+"-images-idx3-ubyte"+suffix] = &fstest.MapFile{Data: img}
	fsys[prefix+"-labels-idx1-ubyte"+suffix] = &fstest.MapFile{Data: lab}
}

func TestLoadSplit(t *testing.T) {
	fsys := fstest.MapFS{}
	split(t, fsys, "train", 3, 2, 2, []byte{9, 0, 4}, true)
	split(t, fsys, "t10k", 2, 2, 2, []byte{1, 1}, false)
	tr, err := loadSplit(fsys, "train")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 3 || tr.Pixels() != 4 || tr.Labels[0] != 9 || tr.Images[1] != float32(1)/255 || tr.Images[11] != float32(11)/255 {
		t.Errorf("train set %+v", tr)
	}
	if te, err := loadSplit(fsys, "t10k"); err != nil || te.Len() != 2 {
		t.Errorf("plain files: %v %v", te, err)
	}

	bad := fstest.MapFS{}
	split(t, bad, "count", 3, 2, 2, []byte{1, 2}, false)
	split(t, bad, "label", 2, 2, 2, []byte{1, 10}, false)
	bad["dims-images-idx3-ubyte"] = &fstest.MapFile{Data: idxBytes(t, []int{2, 4}, make([]byte, 8))}
	bad["dims-labels-idx1-ubyte"] = &fstest.MapFile{Data: idxBytes(t, []int{2}, []byte{1, 2})}
	bad["corrupt-images-idx3-ubyte"] = &fstest.MapFile{Data: []byte{1, 2, 3, 4}}
	for prefix, want := range map[string]string{
		"count":   "do not match",
		"label":   "label 10 of image 1 is not a class",
		"dims":    "do not match",
		"corrupt": "corrupt-images-idx3-ubyte: idx: bad magic number",
		"missing": "file does not exist",
	} {
		if _, err := loadSplit(bad, prefix); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", prefix, err, want)
		}
	}
}

func TestLoadData(t *testing.T) {
	dir := t.TempDir()
	fsys := fstest.MapFS{}
	split(t, fsys, "train", 3, 28, 28, []byte{1, 2, 3}, true)
	split(t, fsys, "t10k", 1, 28, 28, []byte{4}, false)
	for name, f := range fsys {
		if err := os.WriteFile(filepath.Join(dir, name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, te, source, err := loadData(dir, nil)
	if err != nil || tr.Len() != 3 || te.Len() != 1 || source != dir {
		t.Errorf("from a directory: %v %v %q %v", tr, te, source, err)
	}
	if _, _, _, err := loadData(t.TempDir(), nil); err == nil {
		t.Error("an empty directory gave no error")
	}
}

// The embedded subset is class balanced: 1,000 training and 200 test images of each class.
func TestEmbeddedSubset(t *testing.T) {
	tr, te, source, err := loadData("embedded", embeddedSubset())
	if err != nil {
		t.Fatal(err)
	}
	if source != "embedded subset" {
		t.Errorf("source %q", source)
	}
	for _, c := range []struct {
		ds       *Dataset
		perClass int
	}{{tr, 1000}, {te, 200}} {
		if c.ds.Rows != 28 || c.ds.Cols != 28 || c.ds.Len() != 10*c.perClass || len(c.ds.Images) != c.ds.Len()*784 {
			t.Fatalf("%d images of %dx%d", c.ds.Len(), c.ds.Rows, c.ds.Cols)
		}
		var count [10]int
		for _, l := range c.ds.Labels {
			count[l]++
		}
		for k, n := range count {
			if n != c.perClass {
				t.Errorf("class %d (%s): %d images, want %d", k, Classes[k], n, c.perClass)
			}
		}
		lo, hi := float32(1), float32(0)
		for _, v := range c.ds.Images {
			lo, hi = min(lo, v), max(hi, v)
		}
		if lo != 0 || hi != 1 {
			t.Errorf("pixels in [%v, %v], want [0, 1]", lo, hi)
		}
	}
}

// Two epochs on a fifth of the embedded subset already classify most test images, and the
// trained model survives a weights round trip.
func TestTrainSmoke(t *testing.T) {
	tr, te, _, err := loadData("embedded", embeddedSubset())
	if err != nil {
		t.Fatal(err)
	}
	d := ops.CPU()
	base := d.Stats().LiveBytes
	sess := autograd.NewSession(autograd.Options{Device: d, Seed: 1})
	model := nn.NewMLP(sess, []int{784, 64, 10}, nn.MLPOptions{})
	opt := autograd.NewSGD(nn.Parameters(model), autograd.SGDOptions{LR: 0.1})
	small := &Dataset{Rows: tr.Rows, Cols: tr.Cols, Images: tr.Images[:2000*tr.Pixels()], Labels: tr.Labels[:2000]}
	trLoader, err := loader(small, 50, true, 1, d)
	if err != nil {
		t.Fatal(err)
	}
	teLoader, err := loader(te, 1000, false, 0, d)
	if err != nil {
		t.Fatal(err)
	}
	for epoch := range 2 {
		for b := range trLoader.Epoch(epoch) {
			step(sess, model, opt, b)
		}
	}
	acc := accuracy(sess, model, teLoader)
	if err := errors.Join(sess.Err(), trLoader.Err(), teLoader.Err()); err != nil {
		t.Fatal(err)
	}
	if acc < 0.6 {
		t.Errorf("test accuracy %.3f after 2 epochs on 2,000 images", acc)
	}

	// The weights file restores the same model in a new session.
	path := filepath.Join(t.TempDir(), "mlp.safetensors")
	if err := nn.SaveWeights(path, model); err != nil {
		t.Fatal(err)
	}
	sess2 := autograd.NewSession(autograd.Options{Device: d, Seed: 2})
	loaded := nn.NewMLP(sess2, []int{784, 64, 10}, nn.MLPOptions{})
	if err := nn.LoadWeights(path, loaded, true); err != nil {
		t.Fatal(err)
	}
	if acc2 := accuracy(sess2, loaded, teLoader); sess2.Err() != nil || acc2 != acc {
		t.Errorf("reloaded parameters: accuracy %v (%v), want %v", acc2, sess2.Err(), acc)
	}
	opt.Close()
	trLoader.Close()
	teLoader.Close()
	for _, s := range []*autograd.Session{sess, sess2} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.Stats().LiveBytes; got != base {
		t.Errorf("live bytes %d after training, %d before", got, base)
	}
}
