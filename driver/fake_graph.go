//go:build linux && (amd64 || arm64) && !nocuda

package driver

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// Stream capture and graphs on the Fake. A capture on a stream records the kernel launches,
// fills, device copies and event records queued on it (with the device addresses they use,
// checked as usual) instead of running them; EndCapture makes them a graph, Instantiate an
// executable copy, and each cuGraphLaunch runs the copy again: every recorded launch is counted
// in Launched and its addresses are checked against the live allocations at that moment, so a
// replay that reads freed memory is a violation. The calls that are illegal while capturing
// (synchronizing the stream or the context, copies to or from host memory on the capturing
// stream, cuMemFree, the legacy stream) fail with ErrStreamCaptureUnsupported, invalidate the
// capture and are recorded as violations (this module's callers must never make them).
// GraphEvents lists the capture and graph calls in order.

// fakeGraphs is the graph state of a Fake (under Fake.mu).
type fakeGraphs struct {
	capturing map[uintptr]*fakeCapture // open captures by stream
	graphs    map[uintptr][]fakeCmd
	execs     map[uintptr][]fakeCmd
	next      uintptr // the last handle given out
	ids       uint64
	events    []string
	replays   int64
}

// fakeCapture is one open capture.
type fakeCapture struct {
	id      uint64
	cmds    []fakeCmd
	invalid string // the call that invalidated it
}

// fakeCmd is one recorded command: the call, the kernel of a launch, the addresses it uses.
type fakeCmd struct {
	call, kernel string
	ptrs         []uint64
}

func newFakeGraphs() *fakeGraphs {
	return &fakeGraphs{capturing: map[uintptr]*fakeCapture{}, graphs: map[uintptr][]fakeCmd{}, execs: map[uintptr][]fakeCmd{}}
}

// GraphEvents returns the capture and graph calls so far, in order: "begin capture (mode 2)",
// "end capture: 12 commands", "end capture: invalidated by cuStreamSynchronize",
// "instantiate", "launch", "update", "update failed", "destroy exec", "destroy graph".
func (f *Fake) GraphEvents() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.gr.events...)
}

// GraphReplays returns the number of graph launches the fake ran.
func (f *Fake) GraphReplays() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gr.replays
}

// LiveGraphs returns the number of graphs and executable graphs not destroyed.
func (f *Fake) LiveGraphs() (graphs, execs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.gr.graphs), len(f.gr.execs)
}

// Capturing reports whether a capture is open on any stream.
func (f *Fake) Capturing() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.gr.capturing) > 0
}

// captured records a command queued on stream s when s is capturing (handled true): a launch,
// fill, device copy or event record becomes part of the capture. The addresses are checked
// (uses) either way.
func (f *Fake) captured(call, kernel string, s uintptr, ptrs ...uint64) (handled bool, r uintptr) {
	f.mu.Lock()
	c := f.gr.capturing[s]
	if c != nil {
		c.cmds = append(c.cmds, fakeCmd{call: call, kernel: kernel, ptrs: ptrs})
	}
	f.mu.Unlock()
	if c == nil {
		return false, 0
	}
	return true, f.uses(call+" (captured)", ptrs...)
}

// illegalWhileCapturing fails call when s is capturing (or, with anyStream true, when any
// stream is): it invalidates the capture and records a violation.
func (f *Fake) illegalWhileCapturing(call string, s uintptr, anyStream bool) uintptr {
	f.mu.Lock()
	defer f.mu.Unlock()
	var hit *fakeCapture
	if anyStream {
		for _, c := range f.gr.capturing {
			hit = c
		}
	} else {
		hit = f.gr.capturing[s]
	}
	if hit == nil {
		return 0
	}
	if hit.invalid == "" {
		hit.invalid = call
	}
	f.violations = append(f.violations, call+" while a stream is capturing")
	return uintptr(ErrStreamCaptureUnsupported)
}

func fakeWrite32(p uintptr, v uint32) { *(*uint32)(fakeAddr(p)) = v }

// handle returns a new graph or exec handle (under f.mu).
func (g *fakeGraphs) handle() uintptr {
	g.next++
	return 0x6700 + g.next
}

// addFakeGraphSymbols adds the graph callbacks to syms.
func addFakeGraphSymbols(syms map[string]uintptr, f func() *Fake) {
	cb := purego.NewCallback
	syms["cuStreamBeginCapture_v2"] = cb(func(s, mode uintptr) uintptr {
		g := f()
		g.onThread("cuStreamBeginCapture")
		g.mu.Lock()
		defer g.mu.Unlock()
		if s == 0 || g.gr.capturing[s] != nil {
			g.violations = append(g.violations, "cuStreamBeginCapture on the legacy stream or a capturing one")
			return uintptr(ErrInvalidValue)
		}
		g.gr.ids++
		g.gr.capturing[s] = &fakeCapture{id: g.gr.ids}
		g.gr.events = append(g.gr.events, fmt.Sprintf("begin capture (mode %d)", int32(mode)))
		return 0
	})
	syms["cuStreamEndCapture"] = cb(func(s, pg uintptr) uintptr {
		g := f()
		g.onThread("cuStreamEndCapture")
		g.mu.Lock()
		defer g.mu.Unlock()
		c := g.gr.capturing[s]
		if c == nil {
			return uintptr(ErrStreamCaptureUnmatched)
		}
		delete(g.gr.capturing, s)
		if c.invalid != "" {
			g.gr.events = append(g.gr.events, "end capture: invalidated by "+c.invalid)
			fakeWrite(pg, 0)
			return uintptr(ErrStreamCaptureInvalidated)
		}
		h := g.gr.handle()
		g.gr.graphs[h] = c.cmds
		g.gr.events = append(g.gr.events, fmt.Sprintf("end capture: %d commands", len(c.cmds)))
		fakeWrite(pg, uint64(h))
		return 0
	})
	status := func(g *Fake, s uintptr) (CaptureStatus, uint64) {
		c := g.gr.capturing[s]
		switch {
		case c == nil:
			return CaptureNone, 0
		case c.invalid != "":
			return CaptureInvalidated, c.id
		}
		return CaptureActive, c.id
	}
	syms["cuStreamIsCapturing"] = cb(func(s, pst uintptr) uintptr {
		g := f()
		g.mu.Lock()
		defer g.mu.Unlock()
		st, _ := status(g, s)
		fakeWrite32(pst, uint32(st))
		return 0
	})
	syms["cuStreamGetCaptureInfo_v2"] = cb(func(s, pst, pid, pg, pdeps, pn uintptr) uintptr {
		g := f()
		g.mu.Lock()
		defer g.mu.Unlock()
		st, id := status(g, s)
		fakeWrite32(pst, uint32(st))
		if pid != 0 {
			fakeWrite(pid, id)
		}
		return 0
	})
	syms["cuGraphInstantiateWithFlags"] = cb(func(pe, graph, flags uintptr) uintptr {
		g := f()
		g.onThread("cuGraphInstantiateWithFlags")
		g.mu.Lock()
		defer g.mu.Unlock()
		cmds, ok := g.gr.graphs[graph]
		if !ok {
			g.violations = append(g.violations, fmt.Sprintf("cuGraphInstantiate of %#x, which is not a graph", graph))
			return uintptr(ErrInvalidHandle)
		}
		h := g.gr.handle()
		g.gr.execs[h] = append([]fakeCmd(nil), cmds...)
		g.gr.events = append(g.gr.events, "instantiate")
		fakeWrite(pe, uint64(h))
		return 0
	})
	syms["cuGraphLaunch"] = cb(func(e, s uintptr) uintptr {
		g := f()
		g.onThread("cuGraphLaunch")
		g.onStream("cuGraphLaunch", s)
		g.mu.Lock()
		cmds, ok := g.gr.execs[e]
		if !ok {
			g.violations = append(g.violations, fmt.Sprintf("cuGraphLaunch of %#x, which is not an executable graph", e))
			g.mu.Unlock()
			return uintptr(ErrInvalidHandle)
		}
		if g.gr.capturing[s] != nil {
			g.violations = append(g.violations, "cuGraphLaunch on a capturing stream")
			g.mu.Unlock()
			return uintptr(ErrStreamCaptureUnsupported)
		}
		g.gr.events = append(g.gr.events, "launch")
		g.gr.replays++
		for _, c := range cmds {
			if c.kernel != "" {
				g.launched[c.kernel]++
			}
		}
		g.mu.Unlock()
		for _, c := range cmds {
			if r := g.uses(c.call+" (replayed)", c.ptrs...); r != 0 {
				return r
			}
		}
		return 0
	})
	syms["cuGraphExecUpdate_v2"] = cb(func(e, graph, info uintptr) uintptr {
		g := f()
		g.onThread("cuGraphExecUpdate")
		g.mu.Lock()
		defer g.mu.Unlock()
		old, ok1 := g.gr.execs[e]
		cmds, ok2 := g.gr.graphs[graph]
		if !ok1 || !ok2 {
			g.violations = append(g.violations, "cuGraphExecUpdate of an unknown graph or exec")
			return uintptr(ErrInvalidHandle)
		}
		same := len(old) == len(cmds)
		for i := 0; same && i < len(cmds); i++ {
			same = old[i].call == cmds[i].call && old[i].kernel == cmds[i].kernel
		}
		if !same {
			g.gr.events = append(g.gr.events, "update failed")
			fakeWrite32(info, 2) // CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
			return uintptr(ErrGraphExecUpdateFailure)
		}
		g.gr.execs[e] = append([]fakeCmd(nil), cmds...)
		g.gr.events = append(g.gr.events, "update")
		fakeWrite32(info, 0)
		return 0
	})
	destroy := func(what string, m func(g *Fake) map[uintptr][]fakeCmd) uintptr {
		return cb(func(h uintptr) uintptr {
			g := f()
			g.onThread("cuGraph" + what + "Destroy")
			g.mu.Lock()
			defer g.mu.Unlock()
			if _, ok := m(g)[h]; !ok {
				g.violations = append(g.violations, fmt.Sprintf("destroy of %#x, which is not a live %s", h, what))
				return uintptr(ErrInvalidHandle)
			}
			delete(m(g), h)
			g.gr.events = append(g.gr.events, "destroy "+what)
			return 0
		})
	}
	syms["cuGraphExecDestroy"] = destroy("exec", func(g *Fake) map[uintptr][]fakeCmd { return g.gr.execs })
	syms["cuGraphDestroy"] = destroy("graph", func(g *Fake) map[uintptr][]fakeCmd { return g.gr.graphs })
}

// fakeGraphFuncs fills c's graph table from syms.
func fakeGraphFuncs(c *CUDA, syms map[string]uintptr) {
	c.gfn.resolveGraph(func(name string) uintptr { return syms[name] })
}
