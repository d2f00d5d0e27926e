package main

import (
	"embed"
	"io/fs"
)

// The embedded subset: 10,000 training and 2,000 test images, class balanced (the first 1,000
// and 200 of each class of the original files). See README.md and mksubset.go; the data are
// Zalando Research's, under the MIT license (subset/LICENSE).
//
//go:generate go run mksubset.go data.go
//go:embed subset/*.gz
var subsetFiles embed.FS

// embeddedSubset returns the embedded subset as a directory of IDX files.
func embeddedSubset() fs.FS {
	sub, err := fs.Sub(subsetFiles, "subset")
	if err != nil {
		panic(err) // "subset" is a valid path
	}
	return sub
}
