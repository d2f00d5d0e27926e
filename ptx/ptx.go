// Package ptx holds the CUDA sources of every kernel family, the script that compiles them
// (gen.sh), the generated PTX (embedded), the typed kernel names, and the parser of each
// kernel's .param list that the launch helper checks arguments against.
//
// A module is one .cu file (elementwise.cu, rng.cu, reduce.cu, ...), compiled to one .ptx; the
// runtime loads each kernel on its first use from the module's text cut down to that kernel
// (Kernel.Source), so that the driver JIT-compiles only what runs. A kernel family spans one
// module or a few (elementwise.cu and elementwise_math.cu; softmax.cu and softmax_sm80.cu).
// Kernels are exported with C linkage, so a kernel's PTX .entry name is its CUDA name. Kernel
// names are typed Go values (see kernels.go), never strings assembled at run time; a CPU test
// checks that every Go name has an .entry and every .entry a Go owner, and that the committed
// PTX matches its sources.
//
// Nothing here touches a GPU: package driver loads the text.
package ptx

import (
	"bytes"
	"embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

//go:embed *.ptx
var files embed.FS

// Module names one kernel family: the base name of its .cu and .ptx files. A module named
// <family>_sm<NN> is PTX for the virtual architecture compute_<NN> (its kernels need sm_<NN> or
// later: see Arch); every other module is for compute_70.
type Module string

// Arch returns the compute capability, as 10*major + minor, that the module's PTX targets: its
// kernels load on devices of that capability or later.
func (m Module) Arch() int {
	name := string(m)
	i := strings.LastIndex(name, "_sm")
	if i < 0 {
		return 70
	}
	if arch, err := strconv.Atoi(name[i+3:]); err == nil && arch > 0 {
		return arch
	}
	return 70
}

// Kernel is one PTX entry point of a module. The kernels are the package-level values of
// kernels.go; compare them by pointer.
type Kernel struct {
	Module Module
	Name   string
	id     int
}

func (k *Kernel) String() string { return string(k.Module) + "." + k.Name }

// ID is the kernel's index in All, for per-device tables of loaded functions.
func (k *Kernel) ID() int { return k.id }

// Source returns the module's embedded PTX text.
func (m Module) Source() ([]byte, error) {
	b, err := files.ReadFile(string(m) + ".ptx")
	if err != nil {
		return nil, fmt.Errorf("ptx: no module %q", m)
	}
	return b, nil
}

// Param is the type of one kernel parameter as the PTX declares it.
type Param uint8

// Parameter types. Pointers are U64.
const (
	U64 Param = iota + 1
	U32
	S32
	F32
)

func (p Param) String() string {
	switch p {
	case U64:
		return ".u64"
	case U32:
		return ".u32"
	case S32:
		return ".s32"
	case F32:
		return ".f32"
	}
	return fmt.Sprintf("Param(%d)", uint8(p))
}

var paramTypes = map[string]Param{".u64": U64, ".b64": U64, ".s64": U64, ".u32": U32, ".b32": U32, ".s32": S32, ".f32": F32}

var (
	entryRE = regexp.MustCompile(`(?m)^\.visible \.entry ([A-Za-z_][A-Za-z0-9_]*)\(([^)]*)\)`)
	paramRE = regexp.MustCompile(`\.param (\.[a-z0-9]+) [A-Za-z0-9_]+`)

	parsed sync.Map // Module -> map[string][]Param (or error)
)

// Entries parses the module's PTX and returns each .entry with its parameter types.
func (m Module) Entries() (map[string][]Param, error) {
	if v, ok := parsed.Load(m); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v.(map[string][]Param), nil
	}
	src, err := m.Source()
	if err != nil {
		return nil, err
	}
	entries, err := parseEntries(string(src))
	if err != nil {
		err = fmt.Errorf("ptx: module %s: %w", m, err)
		parsed.Store(m, err)
		return nil, err
	}
	parsed.Store(m, entries)
	return entries, nil
}

func parseEntries(src string) (map[string][]Param, error) {
	out := map[string][]Param{}
	for _, e := range entryRE.FindAllStringSubmatch(src, -1) {
		var ps []Param
		for _, p := range paramRE.FindAllStringSubmatch(e[2], -1) {
			t, ok := paramTypes[p[1]]
			if !ok {
				return nil, fmt.Errorf("entry %s: unsupported parameter type %s", e[1], p[1])
			}
			ps = append(ps, t)
		}
		if strings.Count(e[2], ".param") != len(ps) {
			return nil, fmt.Errorf("entry %s: unparsed parameters in %q", e[1], e[2])
		}
		out[e[1]] = ps
	}
	return out, nil
}

// Params returns the kernel's parameter types, in order.
func (k *Kernel) Params() ([]Param, error) {
	entries, err := k.Module.Entries()
	if err != nil {
		return nil, err
	}
	ps, ok := entries[k.Name]
	if !ok {
		return nil, fmt.Errorf("ptx: module %s has no .entry %s", k.Module, k.Name)
	}
	return ps, nil
}

// Source returns PTX that defines the kernel alone: its module's text without the module's
// other .entry definitions (the module-scope directives, declarations and .func definitions
// stay). The driver JIT-compiles a whole module when it loads one, so a kernel loaded from its
// own text costs the first launch that kernel's compilation only (one matmul entry, not all
// eight of its module).
func (k *Kernel) Source() ([]byte, error) {
	src, err := k.Module.Source()
	if err != nil {
		return nil, err
	}
	out, err := entrySource(src, k.Name)
	if err != nil {
		return nil, fmt.Errorf("ptx: module %s: %w", k.Module, err)
	}
	return out, nil
}

// entrySource returns src with every .entry definition other than name's removed; name must be
// defined exactly once.
func entrySource(src []byte, name string) ([]byte, error) {
	out, found, err := keepEntries(src, func(entry string) bool { return entry == name })
	if err != nil {
		return nil, err
	}
	if found != 1 {
		return nil, fmt.Errorf("%d definitions of .entry %s", found, name)
	}
	return out, nil
}

// keepEntries returns src without the .entry definitions that keep refuses, and how many it
// kept. A definition runs from its ".entry" line (at the start of a line, after an optional
// linkage directive) to the line whose closing brace balances the braces counted since, comments
// excluded: PTX puts braces only around blocks and vector operands, which balance within their
// line.
func keepEntries(src []byte, keep func(entry string) bool) ([]byte, int, error) {
	out := make([]byte, 0, len(src))
	kept := 0
	for rest := src; len(rest) > 0; {
		line, next := cutLine(rest)
		entry, ok := entryName(line)
		if !ok {
			out = append(out, line...)
			rest = next
			continue
		}
		// The definition: up to the line where the brace depth, once opened, is back to 0.
		end, depth, opened := 0, 0, false
		for body := rest; len(body) > 0; {
			l, after := cutLine(body)
			c := code(l)
			depth += bytes.Count(c, []byte("{")) - bytes.Count(c, []byte("}"))
			opened = opened || bytes.IndexByte(c, '{') >= 0
			end += len(l)
			body = after
			if opened && depth == 0 {
				break
			}
		}
		if !opened || depth != 0 {
			return nil, 0, fmt.Errorf("entry %s: unbalanced braces", entry)
		}
		if keep(entry) {
			out = append(out, rest[:end]...)
			kept++
		}
		rest = rest[end:]
	}
	return out, kept, nil
}

// cutLine splits b after its first newline (or at its end).
func cutLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i+1], b[i+1:]
	}
	return b, nil
}

// entryName reports whether the line begins an .entry definition, and its name.
func entryName(line []byte) (string, bool) {
	for _, linkage := range [][]byte{[]byte(".visible "), []byte(".weak ")} {
		line = bytes.TrimPrefix(line, linkage)
	}
	rest, ok := bytes.CutPrefix(line, []byte(".entry "))
	if !ok {
		return "", false
	}
	rest = bytes.TrimSpace(rest)
	if i := bytes.IndexAny(rest, "( \t"); i >= 0 {
		rest = rest[:i]
	}
	return string(rest), len(rest) > 0
}

// code is the line without its comment.
func code(line []byte) []byte {
	if i := bytes.Index(line, []byte("//")); i >= 0 {
		return line[:i]
	}
	return line
}
