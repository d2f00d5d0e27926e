package dist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/torchlean-go/torchlean/ops"
)

// The TCP rendezvous and the host exchanger that runs over it.
//
// Rank 0 listens on MASTER_PORT (every interface); every other rank connects to
// MASTER_ADDR:MASTER_PORT, retrying while nothing listens yet, and sends a hello: the magic
// "TLDDP1", its rank and the world size (big-endian uint32s) and the communicator kind ('n' for
// NCCL, 'h' for host). Once rank 0 holds a valid hello from every rank it answers each with a
// status byte (0) and the payload (the NCCL unique id, or nothing), each a uint32 length and the
// bytes; an invalid hello (another world size, a rank out of range or taken, another kind) is
// answered with status 1 and the reason, and fails the rendezvous on every rank. The
// connections stay open: the host exchanger's AllGather sends each rank's vector to rank 0 (a
// uint64 count and the float32 bits, little-endian), and rank 0 sends every rank all of them in
// rank order. Each exchange waits at most the timeout for any rank.

const magic = "TLDDP1"

// TCPGroup is the rendezvous connections of one rank, and the ops.Exchanger of the host
// collectives over them (star through rank 0).
type TCPGroup struct {
	rank, size int
	timeout    time.Duration
	conns      []net.Conn // rank 0: conns[r] to rank r (r >= 1); others: conns[0] to rank 0

	mu     sync.Mutex
	err    error
	closed bool
}

// Rendezvous joins the group of e (see the comment at the top of tcp.go) within timeout (0:
// ops.DefaultCollectiveTimeout) and returns the connections and rank 0's payload (rank 0 gets
// its own back). kind is the communicator kind each rank will make; all must agree.
func Rendezvous(e Env, kind byte, payload []byte, timeout time.Duration) (*TCPGroup, []byte, error) {
	if err := e.Validate(); err != nil {
		return nil, nil, err
	}
	timeout = timeoutOr(timeout)
	g := &TCPGroup{rank: e.Rank, size: e.WorldSize, timeout: timeout}
	if e.Rank == 0 {
		if err := g.serve(e, kind, payload); err != nil {
			g.Close()
			return nil, nil, err
		}
		return g, payload, nil
	}
	got, err := g.join(e, kind)
	if err != nil {
		g.Close()
		return nil, nil, err
	}
	return g, got, nil
}

func (g *TCPGroup) serve(e Env, kind byte, payload []byte) error {
	g.conns = make([]net.Conn, e.WorldSize)
	if e.WorldSize == 1 {
		return nil
	}
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(e.MasterPort))
	if err != nil {
		return fmt.Errorf("dist: rendezvous: rank 0 cannot listen on MASTER_PORT=%d: %w", e.MasterPort, err)
	}
	defer ln.Close()
	deadline := time.Now().Add(g.timeout)
	ln.(*net.TCPListener).SetDeadline(deadline)
	for joined := 1; joined < e.WorldSize; {
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("dist: rendezvous: rank 0 got %d of %d ranks within %v at port %d: %w",
				joined, e.WorldSize, g.timeout, e.MasterPort, err)
		}
		c.SetDeadline(deadline)
		r, reason := readHello(c, e.WorldSize, kind)
		if reason == "" && g.conns[r] != nil {
			reason = fmt.Sprintf("rank %d joined twice", r)
		}
		if reason != "" {
			writeReply(c, 1, []byte(reason))
			c.Close()
			err := fmt.Errorf("dist: rendezvous: %s", reason)
			for _, o := range g.conns {
				if o != nil {
					writeReply(o, 1, []byte(reason))
				}
			}
			return err
		}
		g.conns[r] = c
		joined++
	}
	for _, c := range g.conns[1:] {
		if err := writeReply(c, 0, payload); err != nil {
			return fmt.Errorf("dist: rendezvous: answering a rank: %w", err)
		}
		c.SetDeadline(time.Time{})
	}
	return nil
}

// readHello reads a hello and returns its rank, or the reason it is refused.
func readHello(c net.Conn, world int, kind byte) (int, string) {
	var h [len(magic) + 9]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return 0, fmt.Sprintf("a connection from %s sent no hello: %v", c.RemoteAddr(), err)
	}
	if string(h[:len(magic)]) != magic {
		return 0, fmt.Sprintf("a connection from %s is not a torchlean rank", c.RemoteAddr())
	}
	r := int(binary.BigEndian.Uint32(h[len(magic):]))
	w := int(binary.BigEndian.Uint32(h[len(magic)+4:]))
	k := h[len(magic)+8]
	switch {
	case w != world:
		return 0, fmt.Sprintf("rank %d says WORLD_SIZE=%d, rank 0 says %d", r, w, world)
	case r < 1 || r >= world:
		return 0, fmt.Sprintf("a rank says RANK=%d (WORLD_SIZE=%d)", r, world)
	case k != kind:
		return 0, fmt.Sprintf("rank %d makes a %s communicator, rank 0 a %s one (all ranks need CUDA with NCCL, or none)",
			r, kindName(k), kindName(kind))
	}
	return r, ""
}

func kindName(k byte) string {
	if k == 'n' {
		return "NCCL"
	}
	return "host"
}

func writeReply(c net.Conn, status byte, b []byte) error {
	msg := make([]byte, 5+len(b))
	msg[0] = status
	binary.BigEndian.PutUint32(msg[1:], uint32(len(b)))
	copy(msg[5:], b)
	_, err := c.Write(msg)
	return err
}

func (g *TCPGroup) join(e Env, kind byte) ([]byte, error) {
	addr := net.JoinHostPort(e.MasterAddr, strconv.Itoa(e.MasterPort))
	deadline := time.Now().Add(g.timeout)
	var c net.Conn
	for {
		var err error
		c, err = net.DialTimeout("tcp", addr, max(time.Until(deadline), time.Millisecond))
		if err == nil {
			break
		}
		var dns *net.DNSError
		if errors.As(err, &dns) && !dns.IsTemporary {
			return nil, fmt.Errorf("dist: rendezvous: rank %d cannot resolve MASTER_ADDR=%q: %w", e.Rank, e.MasterAddr, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("dist: rendezvous: rank %d found no rank 0 at MASTER_ADDR:MASTER_PORT=%s within %v: %w",
				e.Rank, addr, g.timeout, err)
		}
		time.Sleep(min(100*time.Millisecond, time.Until(deadline)+time.Millisecond))
	}
	g.conns = []net.Conn{c}
	c.SetDeadline(deadline)
	var h bytes.Buffer
	h.WriteString(magic)
	binary.Write(&h, binary.BigEndian, uint32(e.Rank))
	binary.Write(&h, binary.BigEndian, uint32(e.WorldSize))
	h.WriteByte(kind)
	if _, err := c.Write(h.Bytes()); err != nil {
		return nil, fmt.Errorf("dist: rendezvous: rank %d: sending to %s: %w", e.Rank, addr, err)
	}
	var hdr [5]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return nil, fmt.Errorf("dist: rendezvous: rank %d: no answer from rank 0 at %s within %v: %w", e.Rank, addr, g.timeout, err)
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, fmt.Errorf("dist: rendezvous: rank %d: reading rank 0's answer: %w", e.Rank, err)
	}
	if hdr[0] != 0 {
		return nil, fmt.Errorf("dist: rendezvous: rank 0 refused: %s", b)
	}
	c.SetDeadline(time.Time{})
	return b, nil
}

// Rank returns this rank.
func (g *TCPGroup) Rank() int { return g.rank }

// Size returns the number of ranks.
func (g *TCPGroup) Size() int { return g.size }

// Close closes the connections (the other ranks' next exchange fails).
func (g *TCPGroup) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		for _, c := range g.conns {
			if c != nil {
				c.Close()
			}
		}
	}
	return nil
}

// Abort ends the group: the connections close, so every other rank's exchange fails too.
func (g *TCPGroup) Abort(err error) {
	g.mu.Lock()
	if g.err == nil {
		if !errors.Is(err, ops.ErrAborted) {
			err = fmt.Errorf("%w: %w", ops.ErrAborted, err)
		}
		g.err = err
	}
	g.mu.Unlock()
	g.Close()
}

func (g *TCPGroup) failure() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return g.err
	}
	if g.closed {
		return fmt.Errorf("%w: the group's connections are closed", ops.ErrAborted)
	}
	return nil
}

// AllGather is the ops.Exchanger method: through rank 0, each wait bounded by the timeout.
func (g *TCPGroup) AllGather(data []float32) ([][]float32, error) {
	if err := g.failure(); err != nil {
		return nil, err
	}
	all, err := g.allGather(data)
	if err != nil {
		if f := g.failure(); f != nil { // aborted meanwhile: that is the cause
			return nil, f
		}
		err = fmt.Errorf("%w: dist: rank %d: %w", ops.ErrAborted, g.rank, err)
		g.Abort(err)
		return nil, err
	}
	return all, nil
}

func (g *TCPGroup) allGather(data []float32) ([][]float32, error) {
	deadline := time.Now().Add(g.timeout)
	if g.rank != 0 {
		c := g.conns[0]
		c.SetDeadline(deadline)
		if err := writeFrame(c, data); err != nil {
			return nil, fmt.Errorf("sending to rank 0: %w", err)
		}
		all := make([][]float32, g.size)
		for r := range all {
			v, err := readFrame(c)
			if err != nil {
				return nil, fmt.Errorf("receiving from rank 0: %w", explain(err, g.timeout))
			}
			all[r] = v
		}
		return all, nil
	}
	all := make([][]float32, g.size)
	all[0] = data
	for r := 1; r < g.size; r++ {
		c := g.conns[r]
		c.SetDeadline(deadline)
		v, err := readFrame(c)
		if err != nil {
			return nil, fmt.Errorf("receiving from rank %d: %w", r, explain(err, g.timeout))
		}
		all[r] = v
	}
	var out bytes.Buffer
	for _, v := range all {
		appendFrame(&out, v)
	}
	for r := 1; r < g.size; r++ {
		if _, err := g.conns[r].Write(out.Bytes()); err != nil {
			return nil, fmt.Errorf("sending to rank %d: %w", r, err)
		}
	}
	return all, nil
}

// explain names the usual causes of a failed read.
func explain(err error, timeout time.Duration) error {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("connection closed (the rank died or gave up): %w", err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("nothing within %v (the rank hangs): %w", timeout, err)
	}
	return err
}

func appendFrame(b *bytes.Buffer, v []float32) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(v)))
	b.Write(n[:])
	var w [4]byte
	for _, x := range v {
		binary.LittleEndian.PutUint32(w[:], math.Float32bits(x))
		b.Write(w[:])
	}
}

func writeFrame(c net.Conn, v []float32) error {
	var b bytes.Buffer
	appendFrame(&b, v)
	_, err := c.Write(b.Bytes())
	return err
}

// maxFrame bounds a received vector (2^31 floats), so that a corrupt count cannot exhaust memory.
const maxFrame = 1 << 31

func readFrame(c net.Conn) ([]float32, error) {
	var n [8]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, err
	}
	cnt := binary.LittleEndian.Uint64(n[:])
	if cnt > maxFrame || cnt > math.MaxInt/4 {
		return nil, fmt.Errorf("a frame of %d floats", cnt)
	}
	b := make([]byte, 4*int(cnt))
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, err
	}
	v := make([]float32, cnt)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
