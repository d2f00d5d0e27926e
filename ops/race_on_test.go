//go:build race

package ops

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = true
