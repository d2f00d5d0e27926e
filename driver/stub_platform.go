//go:build !nocuda && (!linux || !(amd64 || arm64))

package driver

import "runtime"

var stubReason = "driver: CUDA needs linux/amd64 or linux/arm64 (this build is " + runtime.GOOS + "/" + runtime.GOARCH + ")"
