//go:build nocuda

package driver

const stubReason = "driver: built with nocuda"
