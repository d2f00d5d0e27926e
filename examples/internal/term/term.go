// Package term holds what the example programs print and profile with: a one-line progress bar
// and a CPU profile switch.
package term

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"time"
)

// Progress is a one-line text progress bar on standard output. On a terminal it redraws itself
// in place; elsewhere (a log, a pipe) it prints only the final line.
type Progress struct {
	label      string
	total      int
	terminal   bool
	lastUpdate time.Time
}

// NewProgress returns a bar of total steps headed by label.
func NewProgress(label string, total int) *Progress {
	fi, err := os.Stdout.Stat()
	return &Progress{label: label, total: total, terminal: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

// Line returns the bar with done of total steps finished and note after it.
func (p *Progress) Line(done int, note string) string {
	const width = 30
	fill := width * done / max(p.total, 1)
	return fmt.Sprintf("%s [%s%s] %3d%%  %s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), 100*done/max(p.total, 1), note)
}

// Update redraws the bar (at most 10 times a second) with done of total steps finished and the
// note that note returns (called only then).
func (p *Progress) Update(done int, note func() string) {
	if !p.terminal || (time.Since(p.lastUpdate) < 100*time.Millisecond && done < p.total) {
		return
	}
	p.lastUpdate = time.Now()
	fmt.Printf("\r\033[K%s", p.Line(done, note()))
}

// Done prints the finished bar with a final note and ends the line.
func (p *Progress) Done(note string) {
	if p.terminal {
		fmt.Print("\r\033[K")
	}
	fmt.Println(p.Line(p.total, note))
}

// StartProfile starts a CPU profile written to path (none when path is empty) and returns the
// function that stops it and closes the file.
func StartProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
