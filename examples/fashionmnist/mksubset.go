//go:build ignore

// Mksubset writes the subset of Fashion-MNIST that the example embeds (subset/*.gz) from the
// full data set: the first 1,000 training images of each class (10,000 of the 60,000) and the
// first 200 test images of each class (2,000 of the 10,000), each kept in the order of the
// original file, as gzip-compressed IDX files with the original names. Run it in this directory
// with the full set installed (apt-get install dataset-fashion-mnist) or named by -src:
//
//	go run mksubset.go data.go [-src DIR] [-train 1000] [-test 200]
//
// The output depends only on the input and the Go version's compress/flate.
package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
)

func main() {
	src := flag.String("src", DebianDir, "directory of the full data set (IDX files, gzip-compressed or plain)")
	out := flag.String("out", "subset", "output directory")
	train := flag.Int("train", 1000, "training images per class")
	test := flag.Int("test", 200, "test images per class")
	flag.Parse()
	fsys := os.DirFS(*src)
	for _, s := range []struct {
		prefix   string
		perClass int
	}{{"train", *train}, {"t10k", *test}} {
		idims, images, err := readIDXFile(fsys, s.prefix+"-images-idx3-ubyte")
		if err != nil {
			log.Fatal(err)
		}
		ldims, labels, err := readIDXFile(fsys, s.prefix+"-labels-idx1-ubyte")
		if err != nil {
			log.Fatal(err)
		}
		if len(idims) != 3 || len(ldims) != 1 || idims[0] != ldims[0] {
			log.Fatalf("%s: images %v and labels %v do not match", s.prefix, idims, ldims)
		}
		pixels := idims[1] * idims[2]
		var taken [len(Classes)]int
		var subImages, subLabels []byte
		for i, l := range labels {
			if int(l) < len(taken) && taken[l] < s.perClass {
				taken[l]++
				subImages = append(subImages, images[i*pixels:(i+1)*pixels]...)
				subLabels = append(subLabels, l)
			}
		}
		n := len(subLabels)
		write(filepath.Join(*out, s.prefix+"-images-idx3-ubyte.gz"), []int{n, idims[1], idims[2]}, subImages)
		write(filepath.Join(*out, s.prefix+"-labels-idx1-ubyte.gz"), []int{n}, subLabels)
		fmt.Printf("%s: %d images, per class %v\n", s.prefix, n, taken)
	}
}

// write writes a gzip-compressed IDX file (no name or time in the gzip header).
func write(path string, dims []int, data []byte) {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		log.Fatal(err)
	}
	if err := writeIDX(zw, dims, data); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %s (%d bytes)\n", path, b.Len())
}
