//go:build race && linux

package ops

// raceEnabled: the test binary runs under the race detector (used by the Linux-only
// host-memory tests).
const raceEnabled = true
