package ptx

import "slices"

// Modules lists every family, in the order of All's first kernel of each (set by init); each
// has <name>.cu and a generated <name>.ptx.
var Modules []Module

func init() {
	for _, k := range All {
		if !slices.Contains(Modules, k.Module) {
			Modules = append(Modules, k.Module)
		}
	}
}

// All lists every kernel with a Go owner, in declaration order (Kernel.ID is the index); the
// tests check it against the PTX entries.
var All []*Kernel

func newKernel(m Module, name string) *Kernel {
	k := &Kernel{Module: m, Name: name, id: len(All)}
	All = append(All, k)
	return k
}
