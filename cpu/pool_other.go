//go:build !amd64 || noasm

package cpu

func poolVector() bool { return false }

func max2x2s2Fast(out maxOut, top, bottom []float32, n int) bool { return false }

func max2x2s2BwdFast(top, bottom, g, at []float32, n int) bool { return false }

func avg2x2s2Fast(y, top, bottom []float32, n int) bool { return false }

func avg2x2s2BwdFast(top, bottom, g []float32, n int) bool { return false }
