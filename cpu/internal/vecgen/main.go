// Command vecgen writes package cpu's vec_amd64.s, vec_amd64.go and vec_kernels.go: the AVX2 (8 lanes) and
// AVX-512 (16 lanes) assembly of the elementwise kernels whose scalar loops live in
// elementwise.go. Run it from the cpu directory (go generate does):
//
//	go run ./internal/vecgen [dir]   // dir: where to write, default "."
//
// Each kernel is written once below, as the sequence of vector operations that mirrors its
// scalar Go twin operation by operation (one VADDPS per float32 addition, one VMULPS per
// rounded product, VDIVPS, VSQRTPS, integer lane operations for the exponent bits). A branch of
// the scalar code becomes both sides computed in every lane and a per-lane select (VBLENDVPS /
// VBLENDMPS), so the lanes that take a side compute exactly that side's operations.
//
// A few building blocks compute some of those operations with other instructions that give the
// same bits for every input the blocks see, each one argued where it is used (exact products
// fused with their addition on AVX-512, VSCALEFPS for the multiplication by 2^k, VGETEXPPS and
// VRNDSCALEPS for exponent and rounding tricks, an integer addition for the mantissa split of
// the logarithm). None of them changes a rounding. Where the scalar code calls Fmaf
// (log1pUnit), the kernels use VFMADD, on both targets (the AVX2 set requires FMA3), and its
// table lookups are VPERMPS. TestVecExhaustive checks every kernel against its scalar loop over
// all 2^32 inputs.
//
// Most kernels have two bodies. The fast body assumes the common case in every lane (e.g.
// |x| < 87.5 for Expf, which skips expRare) and starts with a check of that assumption; when
// any lane fails it, the vector is recomputed from its inputs by the general body, which
// handles every input (NaN, ±Inf, ±0, subnormals, overflow, underflow) with selects. Both
// bodies are straight-line code; a tiny register allocator maps their values to registers
// (Y0-Y15, Z0-Z31, and K1-K7 for AVX-512 masks) and constants are memory operands (32-byte
// vectors for AVX2, embedded broadcasts for AVX-512). A value used long after it is computed
// may be loaded again from the input (Again) or, on AVX-512, wait in a stack slot (Spill).
//
// Speed: the main loop takes up to maxUnroll(k) vectors per iteration (12 for the one-input
// kernels, 4 or 6 for the others), their instructions interleaved (independent chains for the
// out-of-order core; fewer vectors where the registers run out), loads and masks placed just
// before their first use, with one fast-path check for the group and a software prefetch of
// the inputs; the group's general body runs its vectors one after the other. A loop of single vectors does what is
// left, the caller's scalar loop the last len % lanes elements. Which path computes an element
// never changes its bits: every lane runs the same operations.
//
// Edge cases the selects rely on: lanes a branch does not select may compute garbage (NaN,
// ±Inf, huge integers in exponent fields) without trapping, since Go runs with all floating
// point exceptions masked; MXCSR is never touched (round to nearest, no FTZ/DAZ), so subnormal
// results round exactly as in the scalar code. A NaN result may have any payload (the scalar
// code returns CanonicalNaN; the mirror tests compare NaNs by class).
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"log"
	"math"
	"os"
	"sort"
	"strings"
)

// ---------------------------------------------------------------------------------------------
// The constants: each is a float32 (or int32) bit pattern. The float names are those of
// f32math.go and rules.go; TestVecConstants checks the values against the Go constants.

var consts = map[string]uint32{}

func f32(v float32) uint32 { return math.Float32bits(v) }

func init() {
	for name, v := range map[string]float32{
		"log2e":     0x1.715476p+00,
		"magic":     0x1.8p+23,
		"ln2Hi":     0x1.62e4p-01,
		"ln2Lo":     0x1.7f7d1cp-20,
		"expHi":     0x1.64p+06,
		"expLo":     -0x1.ap+06,
		"expMid":    0x1.5ep+06,
		"tanhHi":    0x1.3p+03,
		"two23":     0x1p+23,
		"maxF32":    0x1.fffffep+127,
		"expQ0":     0x1p-01,
		"expQ1":     0x1.5554dep-03,
		"expQ2":     0x1.5555bap-05,
		"expQ3":     0x1.120b4ap-07,
		"expQ4":     0x1.6c6a02p-10,
		"logL1":     0x1.555556p-01,
		"logL2":     0x1.99999ap-02,
		"logL3":     0x1.24924ap-02,
		"logL4":     0x1.c71c72p-03,
		"geluC":     0.044715,
		"gelu3C":    0.134145,
		"geluK2":    2 * float32(0.7978845608),
		"negGeluK2": -2 * float32(0.7978845608),
		"two127":    0x1p+127,
		"negExpMid": -0x1.5ep+06,
		"one":       1,
		"two":       2,
		"half":      0.5,
		"negOne":    -1,
		"zero":      0,
		"minNrm":    0x1p-126,
		"inf":       float32(math.Inf(1)),
		"negInf":    float32(math.Inf(-1)),
		"l1pScale":  0x1.ep-01,
		"l1pBias":   0x1.08p+00,
		"l1pQ2":     -0x1p-01,
		"l1pQ3":     0x1.555556p-02,
		"l1pQ4":     -0x1p-02,
		"l1pQ5":     0x1.99999ap-03,
	} {
		consts[name] = f32(v)
	}
	for name, v := range map[string]uint32{
		"nan":      0x7fffffff, // CanonicalNaN
		"absMask":  0x7fffffff,
		"signMask": 0x80000000,
		"ones":     0xffffffff,
		"expBias":  0x3f800000, // bits(1.0) = 127 << 23
		"i127":     127,
		"iM127":    uint32(0xffffffff - 126), // -127
		"iM150":    uint32(0xffffffff - 149), // -150
		"mantMask": 0x007fffff,
		"sqrt2Man": 0x003504f3, // mantissa bits of sqrt(2)
		"halfBits": 0x3f000000, // bits(0.5)
		"minNrmP":  0x00800000, // bits(2^-126)
		"one_i":    1,
		"logOff":   0x004afb0c, // 0x3f800000 - 0x3f3504f4 (logSplit)
		"logM0":    0x3f3504f4,
	} {
		consts[name] = v
	}
}

// The tables of Lookup: 16 float32 bit patterns each (the names and values of rules.go;
// TestVecConstants checks them).
var tables = []struct {
	name string
	bits [16]uint32
}{
	{"l1pInvc", [16]uint32{
		0x3f800000, 0x3f6ffa3b, 0x3f61e6fd, 0x3f55573e, 0x3f4a206b, 0x3f3ffbb1, 0x3f36d9f7, 0x3f2e86fc,
		0x3f26f439, 0x3f1ff9d0, 0x3f1993f9, 0x3f13adf9, 0x3f0e4071, 0x3f091cd9, 0x3f046f6d, 0x3f000000}},
	{"l1pLogc", [16]uint32{
		0x00000000, 0x3d845e02, 0x3e00139f, 0x3e3aa957, 0x3e71f42f, 0x3e93568e, 0x3eac4a30, 0x3ec42535,
		0x3edadbed, 0x3ef0b81e, 0x3f02ced9, 0x3f0cd57c, 0x3f166b98, 0x3f1fd6ff, 0x3f28b9b3, 0x3f317218}},
}

// ---------------------------------------------------------------------------------------------
// The program representation: values in SSA form, instructions in order.

type val struct {
	id    int
	mask  bool   // a lane mask (K register on AVX-512, all-ones/zero lanes on AVX2)
	konst string // a constant: a memory operand, no register
	param int    // 1 or 2: the scalar argument s0 or s1 (a reserved register)
	slot  int    // k > 0: a value spilled to the stack, 64 bytes at (k-1)*64(SP)
	reg   int
	last  int
}

type inst struct {
	op   string
	dst  *val
	args []*val
	imm  int
	off  int // load, store: the vector's index within the unrolled group
	tied int // fma, fnma: the operand whose register dst takes over (-1: dst gets a copy of args[2])
}

type block struct {
	t     *target // the target being built for (the AVX-512-only instructions)
	ins   []*inst
	vals  []*val
	nin   int // highest input index used + 1
	nout  int
	cur   int // the unrolled copy being built (load and store offsets)
	nslot int // stack slots used by Spill
}

// avx512 reports whether b is built for AVX-512, whose extra instructions (fused multiply-add,
// VSCALEFPS, VGETEXPPS, VRNDSCALEPS) some building blocks use where they give the same bits.
func (b *block) avx512() bool { return b.t.kregs }

func (b *block) newVal(mask bool) *val {
	v := &val{id: len(b.vals), mask: mask, reg: -1, last: -1}
	b.vals = append(b.vals, v)
	return v
}

func (b *block) emit(op string, mask bool, imm int, args ...*val) *val {
	for _, a := range args {
		if a == nil {
			panic("nil operand in " + op)
		}
	}
	var d *val
	switch op {
	case "store", "requireAll", "spill":
	default:
		d = b.newVal(mask)
	}
	b.ins = append(b.ins, &inst{op: op, dst: d, args: args, imm: imm, off: b.cur})
	return d
}

// K returns the constant called name.
func (b *block) K(name string) *val {
	if _, ok := consts[name]; !ok {
		panic("no constant " + name)
	}
	return &val{id: -1, konst: name, reg: -1}
}

// Param returns the scalar argument s0 (k = 1) or s1 (k = 2), broadcast.
func (b *block) Param(k int) *val { return &val{id: -1, param: k, reg: -1} }

func (b *block) In(k int) *val {
	b.nin = max(b.nin, k+1)
	return b.emit("load", false, k)
}

// Again loads input k of the current vector once more: a value used again at the end of a long
// chain is cheaper to reload from the L1 cache than to keep in a register throughout (the
// registers bound how many vectors the main loop interleaves).
func (b *block) Again(k int) *val { return b.In(k) }

// Spill stores v in a stack slot of its own and returns the slot, a value that the
// instructions use as a memory operand (or load, where they need a register): on AVX-512, a
// value computed early and used late costs a store and a load instead of a register through
// the long chain between (the registers bound how many vectors the main loop interleaves).
// Elsewhere it returns v.
func (b *block) Spill(v *val) *val {
	if !b.avx512() {
		return v
	}
	b.nslot++
	b.emit("spill", false, b.nslot, v)
	return &val{id: -1, slot: b.nslot, reg: -1}
}

func (b *block) Out(k int, v *val) {
	b.nout = max(b.nout, k+1)
	b.emit("store", false, k, v)
}

// Float32 arithmetic, each one correctly rounded IEEE operation.
func (b *block) Add(x, y *val) *val { return b.emit("add", false, 0, x, y) }
func (b *block) Sub(x, y *val) *val { return b.emit("sub", false, 0, x, y) }
func (b *block) Mul(x, y *val) *val { return b.emit("mul", false, 0, x, y) }
func (b *block) Div(x, y *val) *val { return b.emit("div", false, 0, x, y) }
func (b *block) Sqrt(x *val) *val   { return b.emit("sqrt", false, 0, x) }

// FMA(x, y, z) = x*y + z and FNMA(x, y, z) = z - x*y, rounded once (VFMADD/VFNMADD): the
// scalar code's Fmaf, and the same as its product-then-add wherever the product x*y is exact.
func (b *block) FMA(x, y, z *val) *val  { return b.emit("fma", false, 0, x, y, z) }
func (b *block) FNMA(x, y, z *val) *val { return b.emit("fnma", false, 0, x, y, z) }

// Lookup returns tables[table].bits[i & 15] in each lane for an int32 index vector i (only its
// low 4 bits count): one VPERMPS on AVX-512; on AVX2, whose VPERMPS reads 8 entries, one per
// half of the table and a select on bit 3 of i.
func (b *block) Lookup(table int, i *val) *val {
	if b.avx512() {
		return b.emit("perm", false, 2*table, i)
	}
	lo := b.emit("perm", false, 2*table, i)
	hi := b.emit("perm", false, 2*table+1, i)
	return b.Sel(b.emit("shl", true, 28, i), hi, lo) // bit 3 of i in the sign bit
}

// AVX-512 only, each used only where it gives the bits of the scalar code's operations (the
// building blocks below say why):
//
//	ScaleF(x, k) = x * 2^floor(k) rounded once (VSCALEFPS): x * 2^k for an integer-valued k;
//	GetExp(x) = floor(log2|x|) as a float (VGETEXPPS): the unbiased exponent of a normal x;
//	RoundEven(x) = x rounded to an integer, ties to even (VRNDSCALEPS $0).
func (b *block) ScaleF(x, k *val) *val { return b.emit("scalef", false, 0, x, k) }
func (b *block) GetExp(x *val) *val    { return b.emit("getexp", false, 0, x) }
func (b *block) RoundEven(x *val) *val { return b.emit("roundeven", false, 0, x) }

// MaxPS is x > y ? x : y (y when either is NaN): VMAXPS with x as first source.
func (b *block) MaxPS(x, y *val) *val { return b.emit("max", false, 0, x, y) }

// MinPS is x < y ? x : y (y when either is NaN): VMINPS with x as first source.
func (b *block) MinPS(x, y *val) *val { return b.emit("min", false, 0, x, y) }

// Bit operations.
func (b *block) And(x, y *val) *val    { return b.emit("and", false, 0, x, y) }
func (b *block) Or(x, y *val) *val     { return b.emit("or", false, 0, x, y) }
func (b *block) Xor(x, y *val) *val    { return b.emit("xor", false, 0, x, y) }
func (b *block) AndNot(x, y *val) *val { return b.emit("andn", false, 0, x, y) } // x &^ y

// Int32 lane arithmetic.
func (b *block) IAdd(x, y *val) *val    { return b.emit("iadd", false, 0, x, y) }
func (b *block) ISub(x, y *val) *val    { return b.emit("isub", false, 0, x, y) }
func (b *block) Shl(x *val, n int) *val { return b.emit("shl", false, n, x) }
func (b *block) Sra(x *val, n int) *val { return b.emit("sra", false, n, x) }
func (b *block) Srl(x *val, n int) *val { return b.emit("srl", false, n, x) }
func (b *block) Cvt(x *val) *val        { return b.emit("cvt", false, 0, x) } // int32 -> float32

// Masks.
const (
	EQ    = 0x00 // ==, ordered
	LT    = 0x11 // <, ordered
	LE    = 0x12
	UNORD = 0x03 // either is NaN
	NGE   = 0x09 // !(x >= y): true for NaN
	GT    = 0x1e
	GE    = 0x1d
	NEQ   = 0x04 // !=, unordered (true for NaN)
)

func (b *block) Cmp(pred int, x, y *val) *val { return b.emit("cmp", true, pred, x, y) }
func (b *block) IGt(x, y *val) *val           { return b.emit("igt", true, 0, x, y) } // signed x > y
func (b *block) MAnd(x, y *val) *val          { return b.emit("mand", true, 0, x, y) }
func (b *block) MOr(x, y *val) *val           { return b.emit("mor", true, 0, x, y) }
func (b *block) MNot(x *val) *val             { return b.emit("mnot", true, 0, x) }

// Sel is m ? t : f per lane.
func (b *block) Sel(m, t, f *val) *val { return b.emit("sel", false, 0, m, t, f) }

// RequireAll leaves the fast body for the general one unless every lane of m is set.
func (b *block) RequireAll(m *val) { b.emit("requireAll", false, 0, m) }

// ---------------------------------------------------------------------------------------------
// Targets.

type target struct {
	name    string // "AVX2", "AVX512"
	lanes   int
	nregs   int
	vreg    string // "Y", "Z"
	kregs   bool
	reserve int // registers reserved for parameters at the top
}

var avx2 = &target{name: "AVX2", lanes: 8, nregs: 16, vreg: "Y"}
var avx512 = &target{name: "AVX512", lanes: 16, nregs: 32, vreg: "Z", kregs: true}

// regOnly reports which operands of op must be registers (the others may be memory operands:
// Intel's last source operand).
func regOnly(op string, i int) bool {
	switch op {
	case "add", "sub", "mul", "div", "max", "min", "and", "or", "xor", "iadd", "isub", "cmp", "igt":
		return i == 0
	case "andn":
		return i == 1
	case "sel":
		return i != 1
	case "fma", "fnma", "scalef":
		return i != 1
	case "getexp":
		return false
	}
	return true
}

func commutative(op string) bool {
	switch op {
	case "add", "mul", "and", "or", "xor", "iadd":
		return true
	}
	return false
}

// prepare swaps commutative operands so that a constant is the memory operand, and
// materializes the constants that remain in register-only slots (a broadcast load).
func (b *block) prepare() {
	var out []*inst
	for _, in := range b.ins {
		if in.op == "bcast" {
			out = append(out, in)
			continue
		}
		mem := func(a *val) bool { return a.konst != "" || a.slot > 0 }
		if (commutative(in.op) || in.op == "fma" || in.op == "fnma") && mem(in.args[0]) && !mem(in.args[1]) {
			in.args[0], in.args[1] = in.args[1], in.args[0]
		}
		for i, a := range in.args {
			if mem(a) && (regOnly(in.op, i) || a.slot > 0 && i > 0 && mem(in.args[i-1])) {
				v := b.newVal(false)
				out = append(out, &inst{op: "bcast", dst: v, args: []*val{a}})
				in.args[i] = v
			}
		}
		out = append(out, in)
	}
	b.ins = out
}

// alloc assigns registers; values die at their last use. It fails when the block needs more
// registers than the target has (there is no spilling).
func (b *block) alloc(t *target) error {
	for i, in := range b.ins {
		for _, a := range in.args {
			if a.id >= 0 {
				a.last = i
			}
		}
	}
	var freeV, freeK []int
	for r := 0; r < t.nregs-t.reserve; r++ {
		freeV = append(freeV, r)
	}
	for r := 1; r <= 7; r++ {
		freeK = append(freeK, r)
	}
	var err error
	take := func(v *val) {
		if v.mask && t.kregs {
			if len(freeK) == 0 {
				err = fmt.Errorf("%s: out of mask registers", t.name)
				freeK = append(freeK, 1)
			}
			v.reg, freeK = freeK[0], freeK[1:]
			return
		}
		if len(freeV) == 0 {
			err = fmt.Errorf("%s: out of vector registers", t.name)
			freeV = append(freeV, 0)
		}
		v.reg, freeV = freeV[0], freeV[1:]
	}
	give := func(v *val) {
		if v.mask && t.kregs {
			freeK = append(freeK, v.reg)
		} else {
			freeV = append(freeV, v.reg)
		}
	}
	for i, in := range b.ins {
		// A fused multiply-add overwrites one of its operands: the addend (form 231) or the
		// register multiplicand (form 132), whichever dies here; otherwise dst is a copy of
		// the addend first.
		in.tied = -1
		if in.op == "fma" || in.op == "fnma" {
			for _, k := range []int{2, 0} {
				a := in.args[k]
				if a.id >= 0 && a.last == i && a != in.args[2-k] && a != in.args[1] {
					in.tied = k
					break
				}
			}
		}
		seen := map[*val]bool{}
		for k, a := range in.args {
			if a.id >= 0 && a.last == i && !seen[a] {
				seen[a] = true
				if k != in.tied {
					give(a)
				}
			}
		}
		if in.dst != nil {
			if in.tied >= 0 {
				in.dst.reg = in.args[in.tied].reg
			} else {
				take(in.dst)
			}
			if in.dst.last < 0 {
				give(in.dst)
			}
		}
	}
	return err
}

// ---------------------------------------------------------------------------------------------
// Emission.

var inPtr = []string{"SI", "DX", "BX"}
var outPtr = []string{"DI", "R8"}

type emitter struct {
	w   *bytes.Buffer
	t   *target
	fn  string
	pre bool // the register holding each param: paramReg(k)
	nt  bool // stores are non-temporal (VMOVNTPS)
}

func (e *emitter) paramReg(k int) string { return fmt.Sprintf("%s%d", e.t.vreg, e.t.nregs-k) }

func (e *emitter) opnd(v *val) string {
	switch {
	case v.konst != "":
		return "c_" + v.konst + "<>(SB)"
	case v.slot > 0:
		return fmt.Sprintf("%s(SP)", offs((v.slot-1)*64))
	case v.param > 0:
		return e.paramReg(v.param)
	case v.mask && e.t.kregs:
		return fmt.Sprintf("K%d", v.reg)
	}
	return fmt.Sprintf("%s%d", e.t.vreg, v.reg)
}

func (e *emitter) line(format string, args ...any) {
	fmt.Fprintf(e.w, "\t"+format+"\n", args...)
}

// ins writes one instruction; bc is ".BCST" when an AVX-512 operand is a constant.
func (e *emitter) ins(in *inst, general string) {
	t := e.t
	a := in.args
	bc := ""
	for _, x := range a {
		if x.konst != "" && t.kregs {
			bc = ".BCST"
		}
	}
	d := ""
	if in.dst != nil {
		d = e.opnd(in.dst)
	}
	o := e.opnd
	fop := map[string]string{"add": "VADDPS", "sub": "VSUBPS", "mul": "VMULPS", "div": "VDIVPS",
		"max": "VMAXPS", "min": "VMINPS", "iadd": "VPADDD", "isub": "VPSUBD"}
	bit2 := map[string]string{"and": "VANDPS", "or": "VORPS", "xor": "VXORPS", "andn": "VANDNPS"}
	bit512 := map[string]string{"and": "VPANDD", "or": "VPORD", "xor": "VPXORD", "andn": "VPANDND"}
	switch in.op {
	case "load":
		e.line("VMOVUPS %s(%s), %s", offs(in.off*4*t.lanes), inPtr[in.imm], d)
	case "store":
		mov := "VMOVUPS"
		if e.nt {
			mov = "VMOVNTPS"
		}
		e.line("%s %s, %s(%s)", mov, o(a[0]), offs(in.off*4*t.lanes), outPtr[in.imm])
	case "spill":
		e.line("VMOVUPS %s, %s(SP)", o(a[0]), offs((in.imm-1)*64))
	case "bcast":
		if a[0].slot > 0 {
			e.line("VMOVUPS %s, %s", o(a[0]), d)
		} else if t.kregs {
			e.line("VBROADCASTSS %s, %s", o(a[0]), d)
		} else {
			e.line("VMOVUPS %s, %s", o(a[0]), d)
		}
	case "add", "sub", "mul", "div", "max", "min", "iadd", "isub":
		e.line("%s%s %s, %s, %s", fop[in.op], bc, o(a[1]), o(a[0]), d)
	case "and", "or", "xor":
		if t.kregs {
			e.line("%s%s %s, %s, %s", bit512[in.op], bc, o(a[1]), o(a[0]), d)
		} else {
			e.line("%s %s, %s, %s", bit2[in.op], o(a[1]), o(a[0]), d)
		}
	case "andn": // a0 &^ a1: Intel ANDN dst, src1, src2 = ^src1 & src2
		if t.kregs {
			e.line("%s%s %s, %s, %s", bit512[in.op], bc, o(a[0]), o(a[1]), d)
		} else {
			e.line("%s %s, %s, %s", bit2[in.op], o(a[0]), o(a[1]), d)
		}
	case "shl", "sra", "srl":
		op := map[string]string{"shl": "VPSLLD", "sra": "VPSRAD", "srl": "VPSRLD"}[in.op]
		e.line("%s $%d, %s, %s", op, in.imm, o(a[0]), d)
	case "cvt":
		e.line("VCVTDQ2PS %s, %s", o(a[0]), d)
	case "sqrt":
		e.line("VSQRTPS %s, %s", o(a[0]), d)
	case "fma", "fnma": // a0*a1 + a2, a2 - a0*a1; a1 may be memory
		op := map[string]string{"fma": "VFMADD", "fnma": "VFNMADD"}[in.op]
		switch in.tied {
		case 2: // dst = a1*a0 + dst
			e.line("%s231PS%s %s, %s, %s", op, bc, o(a[1]), o(a[0]), d)
		case 0: // dst = dst*a1 + a2
			e.line("%s132PS%s %s, %s, %s", op, bc, o(a[1]), o(a[2]), d)
		default:
			e.line("VMOVAPS %s, %s", o(a[2]), d)
			e.line("%s231PS%s %s, %s, %s", op, bc, o(a[1]), o(a[0]), d)
		}
	case "perm": // imm = 2*table + half (the upper 8 entries for AVX2)
		mem := "c_" + tables[in.imm/2].name + "<>(SB)"
		if in.imm%2 == 1 {
			mem = "c_" + tables[in.imm/2].name + "<>+32(SB)"
		}
		e.line("VPERMPS %s, %s, %s", mem, o(a[0]), d)
	case "scalef":
		e.line("VSCALEFPS%s %s, %s, %s", bc, o(a[1]), o(a[0]), d)
	case "getexp":
		e.line("VGETEXPPS %s, %s", o(a[0]), d)
	case "roundeven":
		e.line("VRNDSCALEPS $0, %s, %s", o(a[0]), d)
	case "cmp":
		e.line("VCMPPS%s $0x%02x, %s, %s, %s", bc, in.imm, o(a[1]), o(a[0]), d)
	case "igt":
		e.line("VPCMPGTD%s %s, %s, %s", bc, o(a[1]), o(a[0]), d)
	case "mand", "mor":
		if t.kregs {
			op := map[string]string{"mand": "KANDW", "mor": "KORW"}[in.op]
			e.line("%s %s, %s, %s", op, o(a[1]), o(a[0]), d)
		} else {
			op := map[string]string{"mand": "VANDPS", "mor": "VORPS"}[in.op]
			e.line("%s %s, %s, %s", op, o(a[1]), o(a[0]), d)
		}
	case "mnot":
		if t.kregs {
			e.line("KNOTW %s, %s", o(a[0]), d)
		} else {
			e.line("VXORPS c_ones<>(SB), %s, %s", o(a[0]), d)
		}
	case "sel": // m ? t : f
		if t.kregs {
			e.line("VBLENDMPS%s %s, %s, %s, %s", bc, o(a[1]), o(a[2]), o(a[0]), d)
		} else {
			e.line("VBLENDVPS %s, %s, %s, %s", o(a[0]), o(a[1]), o(a[2]), d)
		}
	case "requireAll":
		if t.kregs {
			e.line("KORTESTW %s, %s", o(a[0]), o(a[0]))
			e.line("JCC %s", general)
		} else {
			e.line("VMOVMSKPS %s, AX", o(a[0]))
			e.line("CMPL AX, $0xff")
			e.line("JNE %s", general)
		}
	default:
		log.Fatalf("unknown op %s", in.op)
	}
}

func offs(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// ---------------------------------------------------------------------------------------------
// Kernels.

type kernel struct {
	name    string // Go-side id suffix, e.g. "Exp" -> vkExp
	doc     string
	ins     int
	outs    int
	params  int
	fast    func(b *block) // nil: the general body alone
	general func(b *block)
}

var kernels []*kernel

func def(name, doc string, ins, outs, params int, fast, general func(b *block)) {
	kernels = append(kernels, &kernel{name, doc, ins, outs, params, fast, general})
}

// ---- building blocks, each mirroring one scalar function of f32math.go / rules.go

func abs(b *block, x *val) *val { return b.And(x, b.K("absMask")) }
func neg(b *block, x *val) *val { return b.Xor(x, b.K("signMask")) }

// expParts is expCore's result for x: m = expm1(r), kf = k as a float, and on AVX2
// j = magic + k (whose bits give 2^k; nil on AVX-512, which scales by kf with VSCALEFPS).
type expParts struct{ j, kf, m *val }

// expCore mirrors expCore: j = x*log2e + magic; kf = j - magic; r = (x - kf*ln2Hi) - kf*ln2Lo;
// q = Horner(Q4..Q0); m = r + r*(r*q).
//
// AVX-512 gets the same kf and m in two instructions fewer, for every x with |x| <= 104 (the
// only lanes whose result is ever selected):
//   - kf = RoundEven(t), t = x*log2e: for |t| < 2^22, t + magic (magic = 1.5*2^23, even, ulp 1)
//     rounds t to the nearest integer with ties to even, exactly, and the subtraction of magic is
//     exact. The one difference is the sign of a zero kf: RoundEven keeps t's sign (-0 for t in
//     [-0.5, -0]) where j - magic gives +0. It never shows in m: for x != 0, x - (±0) = x and
//     x - ±0 = x, so r is the same; for x = -0 (t = -0), r comes out +0 instead of -0, and then
//     m = r + r*(r*q) = ±0 + (+0) = +0 either way (r*(r*q) = r*r*q >= 0, q > 0). VSCALEFPS
//     reads -0 as 2^0 like +0.
//   - x - kf*ln2Hi = FNMA(kf, ln2Hi, x): kf is an integer with |kf| <= 150 (8 bits) and ln2Hi
//     has 15 significant bits, so the product is exact and the fused operation rounds the same
//     difference once.
func expCore(b *block, x *val) expParts {
	var p expParts
	var r *val
	if b.avx512() {
		p.kf = b.RoundEven(b.Mul(x, b.K("log2e")))
		r = b.Sub(b.FNMA(p.kf, b.K("ln2Hi"), x), b.Mul(p.kf, b.K("ln2Lo")))
	} else {
		p.j = b.Add(b.Mul(x, b.K("log2e")), b.K("magic"))
		p.kf = b.Sub(p.j, b.K("magic"))
		r = b.Sub(b.Sub(x, b.Mul(p.kf, b.K("ln2Hi"))), b.Mul(p.kf, b.K("ln2Lo")))
	}
	q := b.Add(b.Mul(r, b.K("expQ4")), b.K("expQ3"))
	q = b.Add(b.Mul(r, q), b.K("expQ2"))
	q = b.Add(b.Mul(r, q), b.K("expQ1"))
	q = b.Add(b.Mul(r, q), b.K("expQ0"))
	p.m = b.Add(r, b.Mul(r, b.Mul(r, q)))
	return p
}

// expPow2 mirrors expPow2: bits(j) << 23 + 0x3f800000 (AVX2).
func expPow2(b *block, j *val) *val { return b.IAdd(b.Shl(j, 23), b.K("expBias")) }

// times2k is s * 2^k, rounded once, for the k of p (|k| <= 150). AVX2 multiplies by expPow2(j)
// (2^k exactly for -126 <= k <= 127, the common branch); AVX-512 uses VSCALEFPS, which rounds the
// exact s*2^k once for every k: the same bits as s * expPow2(j) in the common branch, and as
// scale's (s*2^k1)*2^k2 (an exact product, then one rounding) in the rare one.
func times2k(b *block, s *val, p expParts) *val {
	if b.avx512() {
		return b.ScaleF(s, p.kf)
	}
	return b.Mul(s, expPow2(b, p.j))
}

// expCommon is Expf's common branch, (1 + m) * expPow2(j), valid where |x| < 87.5.
func expCommon(b *block, x *val) *val {
	p := expCore(b, x)
	return times2k(b, b.Add(p.m, b.K("one")), p)
}

// expFastOK is Expf's common-branch condition |x| < 87.5 (false for NaN).
func expFastOK(b *block, x *val) *val { return b.Cmp(LT, abs(b, x), b.K("expMid")) }

// expGeneral mirrors Expf for every x (NaN gives the canonical NaN):
//
//	common: (1 + m) * expPow2(j)
//	rare:   NaN -> NaN; x > 89 -> +Inf; x < -104 -> +0;
//	        k = bits(j) - bits(magic); k1 = k >> 1; k2 = k - k1
//	        ((1 + m) * 2^k1) * 2^k2      (scale; 2^k built as (k + 127) << 23)
//
// On AVX-512 both branches are times2k(1 + m).
func expGeneral(b *block, x *val) *val {
	p := expCore(b, x)
	om := b.Add(p.m, b.K("one"))
	var r *val
	if b.avx512() {
		r = b.ScaleF(om, p.kf)
	} else {
		r = b.Sel(expFastOK(b, x), b.Mul(om, expPow2(b, p.j)), expScaleRare(b, om, p))
	}
	return expLimits(b, x, r)
}

// expScaleRare is expRare's scale(1 + m, k) for om = 1 + m: ((1 + m) * 2^k1) * 2^k2 on AVX2,
// VSCALEFPS on AVX-512 (an exact product, then one rounding: the same bits, see times2k).
func expScaleRare(b *block, om *val, p expParts) *val {
	if b.avx512() {
		return b.ScaleF(om, p.kf)
	}
	k := b.ISub(p.j, b.K("magic"))
	k1 := b.Sra(k, 1)
	k2 := b.ISub(k, k1)
	p1 := b.Shl(b.IAdd(k1, b.K("i127")), 23)
	p2 := b.Shl(b.IAdd(k2, b.K("i127")), 23)
	return b.Mul(b.Mul(om, p1), p2)
}

// expLimits applies expRare's limits to r: x > 89 -> +Inf; x < -104 -> +0; NaN -> NaN.
func expLimits(b *block, x, r *val) *val {
	r = b.Sel(b.Cmp(GT, x, b.K("expHi")), b.K("inf"), r)
	r = b.Sel(b.Cmp(LT, x, b.K("expLo")), b.K("zero"), r)
	return b.Sel(b.Cmp(UNORD, x, x), b.K("nan"), r)
}

// expCoreFused mirrors expCoreFused: j = FMA(x, log2e, magic); kf = j - magic;
// r = FNMA(kf, ln2Lo, FNMA(kf, ln2Hi, x)); q = Horner(Q4..Q0) with FMA; m = FMA(r*r, q, r).
// j is set on both targets (expPow2 builds 2^k from it).
func expCoreFused(b *block, x *val) expParts {
	var p expParts
	p.j = b.FMA(x, b.K("log2e"), b.K("magic"))
	p.kf = b.Sub(p.j, b.K("magic"))
	r := b.FNMA(p.kf, b.K("ln2Lo"), b.FNMA(p.kf, b.K("ln2Hi"), x))
	q := b.FMA(r, b.K("expQ4"), b.K("expQ3"))
	q = b.FMA(r, q, b.K("expQ2"))
	q = b.FMA(r, q, b.K("expQ1"))
	q = b.FMA(r, q, b.K("expQ0"))
	p.m = b.FMA(b.Mul(r, r), q, r)
	return p
}

// expFusedCommon is expFused's common branch, FMA(p, m, p) with p = expPow2(j), valid where
// |x| < 87.5.
func expFusedCommon(b *block, x *val) *val {
	p := expCoreFused(b, x)
	pw := expPow2(b, p.j)
	return b.FMA(pw, p.m, pw)
}

// expFusedGeneral mirrors expFused for every x: the common branch where |x| < 87.5, else
// expRare's scaling and limits.
func expFusedGeneral(b *block, x *val) *val {
	p := expCoreFused(b, x)
	pw := expPow2(b, p.j)
	rare := expScaleRare(b, b.Add(p.m, b.K("one")), p)
	return expLimits(b, x, b.Sel(expFastOK(b, x), b.FMA(pw, p.m, pw), rare))
}

// sigmoidOf is 1 / (1 + e) (GeluBwdf's s, given e = expFused(-v)).
func sigmoidOf(b *block, e *val) *val { return b.Div(b.K("one"), b.Add(e, b.K("one"))) }

// sigmoidFrom mirrors the end of Sigmoidf given t = expFused(-|x|): s = 1 / (1 + t);
// x >= 0 ? s : t * s. A NaN x has t = the canonical NaN, which the arithmetic keeps.
func sigmoidFrom(b *block, x, t *val) *val {
	s := sigmoidOf(b, t)
	return b.Sel(b.Cmp(GE, x, b.K("zero")), s, b.Mul(t, s))
}

// sigmoidFast is Sigmoidf of input 0 where every lane has |x| < 87.5, checked here (as
// -|x| > -87.5, false for NaN); x is loaded again for the final select.
func sigmoidFast(b *block) *val {
	n := b.Or(b.In(0), b.K("signMask")) // -|x|
	b.RequireAll(b.Cmp(GT, n, b.K("negExpMid")))
	return sigmoidFrom(b, b.Again(0), expFusedCommon(b, n))
}

// sigmoidGeneral mirrors Sigmoidf for every x.
func sigmoidGeneral(b *block, x *val) *val {
	return sigmoidFrom(b, x, expFusedGeneral(b, b.Or(x, b.K("signMask"))))
}

// tanhCore mirrors Tanhf's |x| < 9.5 branch for a = |x|: E = FMA(p, m, p - 1) (Go's
// p*m + (p - 1): p*m is exact); y = E / (E + 2).
func tanhCore(b *block, a *val) *val {
	p := expCoreFused(b, b.Add(a, a))
	pw := expPow2(b, p.j)
	e := b.FMA(pw, p.m, b.Sub(pw, b.K("one")))
	return b.Div(e, b.Add(e, b.K("two")))
}

// tanhFast is Tanhf of input 0 where every lane has |x| < 9.5 (the check is emitted here); x is
// loaded again for its sign.
func tanhFast(b *block) *val {
	a := abs(b, b.In(0))
	b.RequireAll(b.Cmp(LT, a, b.K("tanhHi")))
	y := tanhCore(b, a)
	return b.Or(y, b.And(b.Again(0), b.K("signMask")))
}

// tanhGeneral mirrors Tanhf for every x: !(a < 9.5) -> 1; sign of x or'ed in; NaN -> the
// canonical NaN (selected last, so that a negative NaN does not get the sign bit).
func tanhGeneral(b *block, x *val) *val {
	a := abs(b, x)
	y := tanhCore(b, a)
	y = b.Sel(b.Cmp(LT, a, b.K("tanhHi")), y, b.K("one"))
	y = b.Or(y, b.And(x, b.K("signMask")))
	return b.Sel(b.Cmp(UNORD, a, a), b.K("nan"), y)
}

// logSplit is logCore's split of the bits ix of a finite x > 0 (after the subnormal scaling)
// into the exponent and the mantissa m in (0.7071, 1.4143]:
//
//	e = (ix >> 23) + ebias;  ix &= 0x007fffff
//	if ix > 0x003504f3 { ix |= 0x3f000000; e += 1 } else { ix |= 0x3f800000 }
//
// computed without the compare and the selects: with t = ix + 0x004afb0c (= 0x3f800000 -
// 0x3f3504f4), the addition carries into the exponent field exactly when the mantissa bits are
// >= 0x3504f4, leaving mant - 0x3504f4 there (else mant + 0x4afb0c), so
//
//	m = (t & 0x007fffff) + 0x3f3504f4 (0x3f000000 | mant, or 0x3f800000 | mant)
//	e = (t >> 23) + ebias             (the carry is the e += 1)
//
// It returns m and a function that computes e as a float, to be called where e is needed.
// ebias == nil stands for -127; then x must be normal, and on AVX-512 also below
// 0x1.6a09e8p+127 (bits 0x7f3504f4), so that t is the bits of a positive normal float whose
// VGETEXPPS is e, and t waits in a stack slot until then. Otherwise ebias is an int32 vector
// (-150 for the scaled subnormals).
func logSplit(b *block, x, ebias *val) (ef func() *val, m *val) {
	t := b.IAdd(x, b.K("logOff"))
	m = b.IAdd(b.And(t, b.K("mantMask")), b.K("logM0"))
	switch {
	case ebias != nil:
		e := b.Cvt(b.IAdd(b.Srl(t, 23), ebias))
		return func() *val { return e }, m
	case b.avx512():
		ts := b.Spill(t)
		return func() *val { return b.GetExp(ts) }, m
	default:
		e := b.Cvt(b.ISub(b.Srl(t, 23), b.K("i127")))
		return func() *val { return e }, m
	}
}

// logTail is logCore after the split: given the exponent ef (a float) and the mantissa m, and
// ext the correction:
//
//	f = m - 1; s = f/(2 + f); z = s*s; R = z*(L1 + z*(L2 + z*(L3 + z*L4))); corr = s*(f - R)
//	eh = ef*ln2Hi; el = ef*ln2Lo; hi = eh + f; fe = f - (hi - eh)
//	lo = (el + ext) - corr; return hi + (fe + lo)
//
// ext == nil stands for ext = +0: el + 0 == el bit for bit, since el = float(e)*ln2Lo is never
// -0 (float(0) = +0), so the addition is left out. On AVX-512 eh is never rounded on its own:
// ef*ln2Hi is exact (|e| <= 150, 8 bits, times 15 bits), so hi = FMA(ef, ln2Hi, f) and
// hi - eh = FNMA(ef, ln2Hi, hi) give the same bits with one instruction fewer.
func logTail(b *block, efn func() *val, m, ext *val) *val {
	f := b.Sub(m, b.K("one"))
	s := b.Div(f, b.Add(f, b.K("two")))
	z := b.Mul(s, s)
	q := b.Add(b.Mul(z, b.K("logL4")), b.K("logL3"))
	q = b.Add(b.Mul(z, q), b.K("logL2"))
	q = b.Add(b.Mul(z, q), b.K("logL1"))
	rr := b.Mul(z, q)
	corr := b.Mul(s, b.Sub(f, rr))
	// The order keeps few values live (the registers bound the interleaving).
	ef := efn()
	lo := b.Mul(ef, b.K("ln2Lo"))
	if ext != nil {
		lo = b.Add(lo, ext)
	}
	lo = b.Sub(lo, corr)
	var hi, d *val // d = hi - eh
	if b.avx512() {
		hi = b.FMA(ef, b.K("ln2Hi"), f)
		d = b.FNMA(ef, b.K("ln2Hi"), hi)
	} else {
		eh := b.Mul(ef, b.K("ln2Hi"))
		hi = b.Add(eh, f)
		d = b.Sub(hi, eh)
	}
	fe := b.Sub(f, d)
	return b.Add(hi, b.Add(fe, lo))
}

// logNormal is logCore(x, ext) for x in [2^-126, 2^127) (no subnormal scaling, see logSplit).
func logNormal(b *block, x, ext *val) *val {
	ef, m := logSplit(b, x, nil)
	return logTail(b, ef, m, ext)
}

// logOK is the fast-path condition of Logf: x in [2^-126, 2^127) (normal, positive, and far
// enough from the overflow for logSplit; the rest takes the general body).
func logOK(b *block, x *val) *val {
	return b.MAnd(b.Cmp(GE, x, b.K("minNrm")), b.Cmp(LT, x, b.K("two127")))
}

// logGeneral mirrors Logf for every x:
//
//	NaN or x < 0 -> NaN; ±0 -> -Inf; +Inf -> +Inf
//	logCore: if ix < 0x00800000 { x = x*2^23; e = -150 } else { e = -127 }; e += ix >> 23 ...
func logGeneral(b *block, x *val) *val {
	sub := b.IGt(b.K("minNrmP"), x) // bits(x) < 0x00800000 (signed; negative x is overridden below)
	xx := b.Sel(sub, b.Mul(x, b.K("two23")), x)
	ef, m := logSplit(b, xx, b.Sel(sub, b.K("iM150"), b.K("iM127")))
	r := logTail(b, ef, m, nil)
	r = b.Sel(b.Cmp(GT, x, b.K("maxF32")), x, r)
	r = b.Sel(b.Cmp(EQ, x, b.K("zero")), b.K("negInf"), r)
	return b.Sel(b.Cmp(NGE, x, b.K("zero")), b.K("nan"), r)
}

// log1pUnit mirrors log1pUnit (rules.go) for t in [0, 1] or NaN (a NaN result):
//
//	w = Fmaf(t, l1pScale, l1pBias); i = bits(w) >> 19 (row i & 15); c = invc[i]
//	r = Fmaf(t, c, c - 1); q = Fmaf(Fmaf(Fmaf(r, Q5, Q4), r, Q3), r, Q2)
//	return logc[i] + Fmaf(r*r, q, r)
func log1pUnit(b *block, t *val) *val {
	i := b.Srl(b.FMA(t, b.K("l1pScale"), b.K("l1pBias")), 19)
	c := b.Lookup(0, i)
	r := b.FMA(t, c, b.Sub(c, b.K("one")))
	q := b.FMA(r, b.K("l1pQ5"), b.K("l1pQ4"))
	q = b.FMA(r, q, b.K("l1pQ3"))
	q = b.FMA(r, q, b.K("l1pQ2"))
	return b.Add(b.Lookup(1, i), b.FMA(b.Mul(r, r), q, r))
}

// softplus mirrors Softplusf: (x > 0 ? x : 0) + log1pUnit(Expf(-|x|)); VMAXPS(x, +0) is
// x > 0 ? x : +0 (also for NaN and -0). For every x: the general body.
func softplus(b *block, x *val) *val {
	e := expGeneral(b, b.Or(x, b.K("signMask"))) // Expf(-|x|)
	return b.Add(b.MaxPS(x, b.K("zero")), log1pUnit(b, e))
}

// softplusFast is softplus of input 0 where every lane has |x| < 87.5, checked here when check
// is set (as -|x| > -87.5, false for NaN). x is loaded again for the final VMAXPS.
func softplusFast(b *block, check bool) *val {
	n := b.Or(b.In(0), b.K("signMask")) // -|x|
	if check {
		b.RequireAll(b.Cmp(GT, n, b.K("negExpMid")))
	}
	l := log1pUnit(b, expCommon(b, n))
	return b.Add(b.MaxPS(b.Again(0), b.K("zero")), l)
}

// negGeluV mirrors -v with v = geluV(x) = geluK2 * Fmaf((c*x)*x, x, x), as
// FMA((x*c)*x, x, x) * -geluK2: rounding to nearest even is symmetric, so the product with the
// negated constant is the negated product.
func negGeluV(b *block, x *val) *val {
	t := b.Mul(b.Mul(x, b.K("geluC")), x)
	return b.Mul(b.FMA(t, x, x), b.K("negGeluK2"))
}

func init() {
	unaryExp := func(name, doc string, params int, tail func(b *block, x, e *val) *val, arg func(b *block, x *val) *val) {
		def(name, doc, 1, 1, params,
			func(b *block) {
				x := b.In(0)
				n := arg(b, x)
				b.RequireAll(expFastOK(b, n))
				b.Out(0, tail(b, x, expCommon(b, n)))
			},
			func(b *block) {
				x := b.In(0)
				b.Out(0, tail(b, x, expGeneral(b, arg(b, x))))
			})
	}
	id := func(b *block, x *val) *val { return x }
	exp := func(b *block, x, e *val) *val { return e }
	unaryExp("Exp", "dst = Expf(x)", 0, exp, id)
	def("Sigmoid", "dst = Sigmoidf(x)", 1, 1, 0,
		func(b *block) { b.Out(0, sigmoidFast(b)) },
		func(b *block) { b.Out(0, sigmoidGeneral(b, b.In(0))) })
	// Log-softmax backward rows: dx = g - Expf(y) * d.
	def("ExpScaleSub", "dx = g - (Expf(y) * d)", 2, 1, 1,
		func(b *block) {
			y := b.In(0)
			b.RequireAll(expFastOK(b, y))
			b.Out(0, b.Sub(b.In(1), b.Mul(expCommon(b, y), b.Param(1))))
		},
		func(b *block) { b.Out(0, b.Sub(b.In(1), b.Mul(expGeneral(b, b.In(0)), b.Param(1)))) })
	// The softmax rows' exponentials: the subtraction and Expf of two passes, fused.
	unaryExp("ExpSub", "dst = Expf(x - c)", 1, exp, func(b *block, x *val) *val { return b.Sub(x, b.Param(1)) })

	def("Tanh", "dst = Tanhf(x)", 1, 1, 0,
		func(b *block) { b.Out(0, tanhFast(b)) },
		func(b *block) { b.Out(0, tanhGeneral(b, b.In(0))) })

	// Geluf: x / (1 + expFused(-v)).
	def("Gelu", "dst = Geluf(x)", 1, 1, 0,
		func(b *block) {
			n := negGeluV(b, b.In(0))
			b.RequireAll(expFastOK(b, n))
			b.Out(0, b.Div(b.Again(0), b.Add(expFusedCommon(b, n), b.K("one"))))
		},
		func(b *block) {
			x := b.In(0)
			b.Out(0, b.Div(x, b.Add(expFusedGeneral(b, negGeluV(b, x)), b.K("one"))))
		})

	// GeluBwdf: s = 1/(1 + expFused(-v)); inner = 1 + (3c*x)*x;
	// d = s + ((x*(s*(1 - s)))*geluK2)*inner; g*d.
	geluBwd := func(b *block, x, g, e *val) *val {
		s := sigmoidOf(b, e)
		inner := b.Add(b.Mul(b.Mul(x, b.K("gelu3C")), x), b.K("one"))
		ss := b.Mul(s, b.Sub(b.K("one"), s))
		d := b.Add(s, b.Mul(b.Mul(b.Mul(x, ss), b.K("geluK2")), inner))
		return b.Mul(g, d)
	}
	def("GeluBwd", "dx = GeluBwdf(x, g)", 2, 1, 0,
		func(b *block) {
			n := negGeluV(b, b.In(0))
			b.RequireAll(expFastOK(b, n))
			b.Out(0, geluBwd(b, b.Again(0), b.In(1), expFusedCommon(b, n)))
		},
		func(b *block) {
			x := b.In(0)
			b.Out(0, geluBwd(b, x, b.In(1), expFusedGeneral(b, negGeluV(b, x))))
		})

	def("Log", "dst = Logf(x)", 1, 1, 0,
		func(b *block) {
			x := b.In(0)
			b.RequireAll(logOK(b, x))
			b.Out(0, logNormal(b, x, nil))
		},
		func(b *block) { b.Out(0, logGeneral(b, b.In(0))) })

	def("Softplus", "dst = Softplusf(x)", 1, 1, 0,
		func(b *block) { b.Out(0, softplusFast(b, true)) },
		func(b *block) { b.Out(0, softplus(b, b.In(0))) })

	// SafeLogFwd: Logf(Softplusf(x) + eps).
	def("SafeLog", "dst = Logf(Softplusf(x) + eps)", 1, 1, 1,
		func(b *block) {
			y := b.Add(softplusFast(b, true), b.Param(1))
			b.RequireAll(logOK(b, y))
			b.Out(0, logNormal(b, y, nil))
		},
		func(b *block) { b.Out(0, logGeneral(b, b.Add(softplus(b, b.In(0)), b.Param(1)))) })

	def("ExpBwd", "dx = g * Expf(x)", 2, 1, 0,
		func(b *block) {
			x := b.In(0)
			b.RequireAll(expFastOK(b, x))
			b.Out(0, b.Mul(b.In(1), expCommon(b, x)))
		},
		func(b *block) { b.Out(0, b.Mul(b.In(1), expGeneral(b, b.In(0)))) })
	// SoftplusBwd: g * Sigmoidf(x); SigmoidBwdf: s = Sigmoidf(x); g * (s*(1 - s)).
	sigmoidBwd := func(name, doc string, tail func(b *block, s *val) *val) {
		def(name, doc, 2, 1, 0,
			func(b *block) { b.Out(0, b.Mul(b.In(1), tail(b, sigmoidFast(b)))) },
			func(b *block) { b.Out(0, b.Mul(b.In(1), tail(b, sigmoidGeneral(b, b.In(0))))) })
	}
	sigmoidBwd("SoftplusBwd", "dx = g * Sigmoidf(x)", func(b *block, s *val) *val { return s })
	sigmoidBwd("SigmoidBwd", "dx = SigmoidBwdf(x, g)", func(b *block, s *val) *val {
		return b.Mul(s, b.Sub(b.K("one"), s))
	})

	// TanhBwdf: t = Tanhf(x); g * (1 - t*t).
	tanhBwd := func(b *block, t, g *val) *val { return b.Mul(g, b.Sub(b.K("one"), b.Mul(t, t))) }
	def("TanhBwd", "dx = TanhBwdf(x, g)", 2, 1, 0,
		func(b *block) { t := tanhFast(b); b.Out(0, tanhBwd(b, t, b.In(1))) },
		func(b *block) { t := tanhGeneral(b, b.In(0)); b.Out(0, tanhBwd(b, t, b.In(1))) })

	// SafeLogBwdf: t = Expf(-|x|); s = (x >= 0 ? 1 : t) / (1 + t);
	// (g*s) / ((max(x, 0) + log1pUnit(t)) + eps).
	safeLogBwd := func(b *block, x, g, t *val) *val {
		s := b.Div(b.Sel(b.Cmp(GE, x, b.K("zero")), b.K("one"), t), b.Add(t, b.K("one")))
		sp := b.Add(b.MaxPS(x, b.K("zero")), log1pUnit(b, t))
		return b.Div(b.Mul(g, s), b.Add(sp, b.Param(1)))
	}
	def("SafeLogBwd", "dx = SafeLogBwdf(x, g, eps)", 2, 1, 1,
		func(b *block) {
			n := b.Or(b.In(0), b.K("signMask")) // -|x|
			b.RequireAll(b.Cmp(GT, n, b.K("negExpMid")))
			t := expCommon(b, n)
			b.Out(0, safeLogBwd(b, b.Again(0), b.In(1), t))
		},
		func(b *block) {
			x := b.In(0)
			b.Out(0, safeLogBwd(b, x, b.In(1), expGeneral(b, b.Or(x, b.K("signMask")))))
		})

	// The plain kernels: one body each.
	one := func(name, doc string, ins, outs, params int, body func(b *block)) {
		def(name, doc, ins, outs, params, nil, body)
	}
	one("Add", "dst = a + b", 2, 1, 0, func(b *block) { b.Out(0, b.Add(b.In(0), b.In(1))) })
	one("Sub", "dst = a - b", 2, 1, 0, func(b *block) { b.Out(0, b.Sub(b.In(0), b.In(1))) })
	one("Mul", "dst = a * b", 2, 1, 0, func(b *block) { b.Out(0, b.Mul(b.In(0), b.In(1))) })
	one("Scale", "dst = x * c", 1, 1, 1, func(b *block) { b.Out(0, b.Mul(b.In(0), b.Param(1))) })
	one("Axpy", "dst = Fmaf(c, b, a)", 2, 1, 1, func(b *block) { b.Out(0, b.FMA(b.In(1), b.Param(1), b.In(0))) })
	// x > 0 ? x : 0 is VMAXPS(x, +0) (+0 for NaN and -0 too).
	one("Relu", "dst = x > 0 ? x : 0", 1, 1, 0, func(b *block) { b.Out(0, b.MaxPS(b.In(0), b.K("zero"))) })
	one("ReluBwd", "dx = x > 0 ? g : 0", 2, 1, 0, func(b *block) {
		b.Out(0, b.Sel(b.Cmp(GT, b.In(0), b.K("zero")), b.In(1), b.K("zero")))
	})
	one("Sqrt", "dst = Sqrtf(x)", 1, 1, 0, func(b *block) { b.Out(0, b.Sqrt(b.In(0))) })
	one("Abs", "dst = |x|", 1, 1, 0, func(b *block) { b.Out(0, abs(b, b.In(0))) })
	one("Inv", "dst = 1 / x", 1, 1, 0, func(b *block) { b.Out(0, b.Div(b.K("one"), b.In(0))) })
	one("Div", "dst = a / b", 2, 1, 0, func(b *block) { b.Out(0, b.Div(b.In(0), b.In(1))) })
	// Maxf: NaN (any NaN) when either is NaN, else a > b ? a : b (VMAXPS(a, b) but for a NaN a).
	one("Max", "dst = Maxf(a, b)", 2, 1, 0, func(b *block) {
		x, y := b.In(0), b.In(1)
		b.Out(0, b.Sel(b.Cmp(UNORD, x, x), x, b.MaxPS(x, y)))
	})
	one("Min", "dst = Minf(a, b)", 2, 1, 0, func(b *block) {
		x, y := b.In(0), b.In(1)
		b.Out(0, b.Sel(b.Cmp(UNORD, x, x), x, b.MinPS(x, y)))
	})
	// Clampf: r = x < lo ? lo : x (VMAXPS(lo, x)); r > hi ? hi : r (VMINPS(hi, r)).
	one("Clamp", "dst = Clampf(x, lo, hi)", 1, 1, 2, func(b *block) {
		r := b.MaxPS(b.Param(1), b.In(0))
		b.Out(0, b.MinPS(b.Param(2), r))
	})
	one("AbsBwd", "dx = sign(x) * g", 2, 1, 0, func(b *block) {
		x := b.In(0)
		s := b.Sel(b.Cmp(LT, x, b.K("zero")), b.K("negOne"), b.K("zero"))
		s = b.Sel(b.Cmp(GT, x, b.K("zero")), b.K("one"), s)
		b.Out(0, b.Mul(s, b.In(1)))
	})
	one("SqrtBwd", "dx = x > 0 ? g * (1 / (2 * sqrt(x))) : 0", 2, 1, 0, func(b *block) {
		x := b.In(0)
		d := b.Mul(b.In(1), b.Div(b.K("one"), b.Mul(b.Sqrt(x), b.K("two"))))
		b.Out(0, b.Sel(b.Cmp(GT, x, b.K("zero")), d, b.K("zero")))
	})
	one("LogBwd", "dx = g / x", 2, 1, 0, func(b *block) { b.Out(0, b.Div(b.In(1), b.In(0))) })
	one("InvBwd", "dx = -((g * (1/x)) * (1/x))", 2, 1, 0, func(b *block) {
		r := b.Div(b.K("one"), b.In(0))
		b.Out(0, neg(b, b.Mul(b.Mul(b.In(1), r), r)))
	})
	one("ClampBwd", "dx = (x > lo && x < hi) ? g : 0", 2, 1, 2, func(b *block) {
		x := b.In(0)
		in := b.MAnd(b.Cmp(GT, x, b.Param(1)), b.Cmp(LT, x, b.Param(2)))
		b.Out(0, b.Sel(in, b.In(1), b.K("zero")))
	})
	// MaxBwdf / MinBwdf: the strictly larger (smaller) input gets g, the other 0; ties and NaN
	// give h = 0.5*g to both.
	minmaxBwd := func(name, doc string, pred int) {
		one(name, doc, 3, 2, 0, func(b *block) {
			x, y, g := b.In(0), b.In(1), b.In(2)
			h := b.Mul(g, b.K("half"))
			ab := b.Cmp(pred, x, y)
			ba := b.Cmp(pred, y, x)
			b.Out(0, b.Sel(ab, g, b.Sel(ba, b.K("zero"), h)))
			b.Out(1, b.Sel(ba, g, b.Sel(ab, b.K("zero"), h)))
		})
	}
	minmaxBwd("MaxBwd", "(da, db) = MaxBwdf(a, b, g)", GT)
	minmaxBwd("MinBwd", "(da, db) = MinBwdf(a, b, g)", LT)
	one("MulBwd", "da = g * b, db = g * a", 3, 2, 0, func(b *block) {
		x, y, g := b.In(0), b.In(1), b.In(2)
		b.Out(0, b.Mul(g, y))
		b.Out(1, b.Mul(g, x))
	})
	// PyTorch's order for the divisor: (a / b) / b, not a / (b * b), whose b*b overflows or
	// underflows for |b| beyond about 1.8e19 or below about 3.7e-23.
	one("DivBwd", "da = g / b, db = -(g * ((a / b) / b))", 3, 2, 0, func(b *block) {
		x, y, g := b.In(0), b.In(1), b.In(2)
		b.Out(0, b.Div(g, y))
		b.Out(1, neg(b, b.Mul(g, b.Div(b.Div(x, y), y))))
	})
	// Layer norm rows: the centred row and the partials of its sum of squares in one pass, then
	// the normalization and the affine map in one pass.
	one("SubSqAdd", "d = x - c, acc = a + d * d", 2, 2, 1, func(b *block) {
		d := b.Sub(b.In(0), b.Param(1))
		b.Out(0, d)
		b.Out(1, b.Add(b.In(1), b.Mul(d, d)))
	})
	one("NormAffine", "dst = ((x / s) * gamma) + beta", 3, 1, 1, func(b *block) {
		b.Out(0, b.Add(b.Mul(b.Div(b.In(0), b.Param(1)), b.In(1)), b.In(2)))
	})
	// Softmax backward rows: dx = y * (g - d).
	one("SubMul", "dst = b * (a - c)", 2, 1, 1, func(b *block) {
		b.Out(0, b.Mul(b.In(1), b.Sub(b.In(0), b.Param(1))))
	})
	// Layer norm backward rows.
	one("SubDiv", "dst = (x - c) / s", 1, 1, 2, func(b *block) {
		b.Out(0, b.Div(b.Sub(b.In(0), b.Param(1)), b.Param(2)))
	})
	one("MulPair", "u = a * b, w = u * c", 3, 2, 0, func(b *block) {
		u := b.Mul(b.In(0), b.In(1))
		b.Out(0, u)
		b.Out(1, b.Mul(u, b.In(2)))
	})
	one("ScaleSub", "dst = (x * c) - d", 1, 1, 2, func(b *block) {
		b.Out(0, b.Sub(b.Mul(b.In(0), b.Param(1)), b.Param(2)))
	})
	one("SubScaledMul", "dst = (a - (b * c)) * d", 2, 1, 2, func(b *block) {
		b.Out(0, b.Mul(b.Sub(b.In(0), b.Mul(b.In(1), b.Param(1))), b.Param(2)))
	})
	one("AddMul", "dst = a + (b * c)", 3, 1, 0, func(b *block) {
		b.Out(0, b.Add(b.In(0), b.Mul(b.In(1), b.In(2))))
	})
}

// ---------------------------------------------------------------------------------------------
// Output files.

func (k *kernel) fn(t *target) string { return "vk" + k.name + t.name }

// build returns body f for u vectors at once: the u copies' instructions interleaved one by
// one (independent dependency chains side by side for the out-of-order core), the stores last,
// registers allocated.
func build(k *kernel, f func(b *block), t *target, u int) (*block, error) {
	var copies [][]*inst
	b := &block{t: t}
	for c := 0; c < u; c++ {
		n := len(b.ins)
		b.cur = c
		f(b)
		if b.nin != k.ins || b.nout != k.outs {
			log.Fatalf("%s: body uses %d inputs and %d outputs", k.name, b.nin, b.nout)
		}
		copies = append(copies, b.ins[n:])
	}
	var ins, stores []*inst
	for i := 0; ; i++ {
		more := false
		for _, c := range copies {
			if i < len(c) {
				more = true
				if c[i].op == "store" {
					stores = append(stores, c[i])
				} else {
					ins = append(ins, c[i])
				}
			}
		}
		if !more {
			break
		}
	}
	// Masks and loads are computed just before their first use (compares in lockstep would hold
	// one mask register per vector: there are 7; an input loaded where the body's code first
	// names it, e.g. the g of g * f(x), would hold a vector register through the whole chain),
	// and there is one check for the whole group: the masks and'ed as they come, tested where
	// the last one is.
	ins = sink(ins)
	last := -1
	for i, in := range ins {
		if in.op == "requireAll" {
			last = i
		}
	}
	var merged []*inst
	var acc *val
	for i, in := range ins {
		if in.op != "requireAll" {
			merged = append(merged, in)
			continue
		}
		if acc == nil {
			acc = in.args[0]
		} else {
			d := b.newVal(true)
			merged = append(merged, &inst{op: "mand", dst: d, args: []*val{acc, in.args[0]}})
			acc = d
		}
		if i == last {
			merged = append(merged, &inst{op: "requireAll", args: []*val{acc}})
		}
	}
	ins = merged
	b.ins = append(ins, stores...)
	b.prepare()
	return b, b.alloc(t)
}

// sink moves each instruction that computes a mask or loads an input to just before the first
// instruction that uses it.
func sink(ins []*inst) []*inst {
	pending := map[*val]*inst{}
	var out []*inst
	var place func(in *inst)
	place = func(in *inst) {
		for _, a := range in.args {
			if d := pending[a]; d != nil {
				delete(pending, a)
				place(d)
			}
		}
		out = append(out, in)
	}
	for _, in := range ins {
		if in.dst != nil && (in.dst.mask || in.op == "load") {
			pending[in.dst] = in
			continue
		}
		place(in)
	}
	if len(pending) > 0 {
		log.Fatal("sink: a value is never used")
	}
	return out
}

// maxUnroll returns the most vectors per iteration of k's main loop (fewer where the registers
// do not suffice). The heavy kernels are bound by latency: a vector's chain of dependent
// operations (exp: ~45 cycles, softplus: ~100) is long and the core looks ahead only so far, so
// the number of vectors interleaved in program order sets their throughput. The kernels with two
// or more inputs are bound by memory at 2^24 elements and lose bandwidth with longer groups,
// except SafeLogBwd, whose arithmetic is heavy enough to gain up to 6 (BENCHMARKS.md, "Figures behind the code").
func maxUnroll(k *kernel) int {
	switch {
	case k.name == "SafeLogBwd":
		return 6
	case k.ins > 1:
		return 4
	}
	return 12
}

// ntBytes: outputs of at least this many bytes whose starts are vector-aligned take non-temporal
// stores (VMOVNTPS, an SFENCE at the end) in the main loop: such an output is not read back from
// the cache soon, and ordinary stores would first read each of its lines from memory. The same
// values are stored either way. Go's copy makes the same choice from 1 MiB.
const ntBytes = 1 << 20

// prefetchDist is how far ahead (bytes) the main loop prefetches its inputs (2048 and 4096 beat
// 512, 1024 and no prefetch: BENCHMARKS.md, "Figures behind the code").
const prefetchDist = 2048

func genFunc(out *bytes.Buffer, k *kernel, t *target) {
	var body bytes.Buffer
	w := &body
	e := &emitter{w: w, t: t}
	slots := 0 // stack slots of the blocks (Spill)
	defer func() {
		fmt.Fprintf(out, "// func %s(n int, o0, o1, i0, i1, i2 *float32, s0, s1 float32): %s\n", k.fn(t), k.doc)
		if slots == 0 {
			fmt.Fprintf(out, "TEXT ·%s(SB), NOSPLIT, $0-56\n", k.fn(t))
		} else {
			fmt.Fprintf(out, "TEXT ·%s(SB), $%d-56\n", k.fn(t), 64*slots)
		}
		out.Write(body.Bytes())
	}()
	e.line("MOVQ n+0(FP), CX")
	for i := 0; i < k.outs; i++ {
		e.line("MOVQ o%d+%d(FP), %s", i, 8+8*i, outPtr[i])
	}
	for i := 0; i < k.ins; i++ {
		e.line("MOVQ i%d+%d(FP), %s", i, 24+8*i, inPtr[i])
	}
	tt := *t
	tt.reserve = k.params
	e.t = &tt
	for p := 1; p <= k.params; p++ {
		e.line("VBROADCASTSS s%d+%d(FP), %s", p-1, 48+4*(p-1), e.paramReg(p))
	}
	shift := map[int]int{8: 3, 16: 4}[t.lanes]
	e.line("SHRQ $%d, CX", shift)
	// R11 = 1: the outputs take non-temporal stores in the main loop (see ntBytes).
	e.line("XORQ R11, R11")
	e.line("CMPQ CX, $%d", ntBytes/(4*t.lanes))
	e.line("JLT  ntoff")
	e.line("MOVQ DI, R9")
	if k.outs > 1 {
		e.line("ORQ  R8, R9")
	}
	e.line("TESTQ $%d, R9", 4*t.lanes-1)
	e.line("JNZ  ntoff")
	e.line("MOVQ $1, R11")
	fmt.Fprintf(w, "ntoff:\n")
	fast, general := k.fast, k.general
	if fast == nil {
		fast = general
	}
	// Try the unrolled loop; keep one vector per iteration where the registers do not suffice.
	// The general body of a group runs its vectors one after the other (it is rare, and
	// interleaved it would need more registers).
	u := maxUnroll(k)
	var fb *block
	for ; u > 1; u-- {
		var err error
		if fb, err = build(k, fast, e.t, u); err == nil {
			break
		}
	}
	// emit writes b's instructions; in the main loop (prefetch), the group's stores, which come
	// last, twice: ordinary, or non-temporal when R11 is set, falling through to next<u>.
	emit := func(b *block, general string, prefetch bool) {
		slots = max(slots, b.nslot)
		loads := 0
		first := len(b.ins)
		for first > 0 && b.ins[first-1].op == "store" {
			first--
		}
		for i, in := range b.ins {
			if prefetch && i == first {
				e.line("TESTQ R11, R11")
				e.line("JNZ  ntstore%d", u)
				for _, st := range b.ins[first:] {
					e.ins(st, general)
				}
				e.line("JMP  next%d", u)
				fmt.Fprintf(w, "ntstore%d:\n", u)
				e.nt = true
				for _, st := range b.ins[first:] {
					e.ins(st, general)
				}
				e.nt = false
				break
			}
			e.ins(in, general)
			if in.op != "load" {
				continue
			}
			// Software prefetch of the inputs prefetchDist bytes ahead, one per cache line:
			// the hardware prefetcher alone leaves the loads waiting while the arithmetic
			// of the previous vectors runs.
			if loads++; prefetch && loads == k.ins*u {
				for i := 0; i < k.ins; i++ {
					for off := 0; off < u*4*t.lanes; off += 64 {
						e.line("PREFETCHT0 %d(%s)", prefetchDist+off, inPtr[i])
					}
				}
			}
		}
	}
	step := func(n int, label string) {
		fmt.Fprintf(w, "%s:\n", label)
		for i := 0; i < k.outs; i++ {
			e.line("ADDQ $%d, %s", n*4*t.lanes, outPtr[i])
		}
		for i := 0; i < k.ins; i++ {
			e.line("ADDQ $%d, %s", n*4*t.lanes, inPtr[i])
		}
		e.line("SUBQ $%d, CX", n)
	}
	if u > 1 {
		// No PCALIGN: with it and the branches around the stores, Go's assembler (1.26) never
		// settles the sizes of its jumps and does not terminate.
		fmt.Fprintf(w, "loop%d:\n", u)
		e.line("CMPQ CX, $%d", u)
		e.line("JLT  loop1")
		emit(fb, fmt.Sprintf("general%d", u), true)
		step(u, fmt.Sprintf("next%d", u))
		e.line("JMP  loop%d", u)
	}
	fmt.Fprintf(w, "loop1:\n")
	e.line("TESTQ CX, CX")
	e.line("JZ   done")
	b1, err := build(k, fast, e.t, 1)
	if err != nil {
		log.Fatalf("%s: %v", k.name, err)
	}
	emit(b1, "general1", false)
	step(1, "next1")
	e.line("JMP  loop1")
	fmt.Fprintf(w, "done:\n")
	e.line("TESTQ R11, R11")
	e.line("JZ   fenced")
	e.line("SFENCE")
	fmt.Fprintf(w, "fenced:\n")
	e.line("VZEROUPPER")
	e.line("RET")
	if k.fast != nil {
		if u > 1 {
			fmt.Fprintf(w, "general%d:\n", u)
			for c := 0; c < u; c++ {
				gb, err := build(k, func(b *block) { b.cur = c; general(b) }, e.t, 1)
				if err != nil {
					log.Fatalf("%s: %v", k.name, err)
				}
				emit(gb, "", false)
			}
			e.line("JMP  next%d", u)
		}
		fmt.Fprintf(w, "general1:\n")
		g1, err := build(k, general, e.t, 1)
		if err != nil {
			log.Fatalf("%s: %v", k.name, err)
		}
		emit(g1, "", false)
		e.line("JMP  next1")
	}
	fmt.Fprintln(w)
}

const header = "// Code generated by cpu/internal/vecgen; DO NOT EDIT.\n\n"

func main() {
	used := map[string]bool{"ones": true}
	// Record every constant the kernels use (by generating once into a scratch buffer).
	var asm bytes.Buffer
	for _, t := range []*target{avx2, avx512} {
		for _, k := range kernels {
			genFunc(&asm, k, t)
		}
	}
	for _, m := range strings.Split(asm.String(), "c_")[1:] {
		used[m[:strings.Index(m, "<>")]] = true
	}
	for _, tab := range tables {
		delete(used, tab.name)
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)

	var s bytes.Buffer
	s.WriteString(header)
	s.WriteString("//go:build amd64 && !noasm\n\n#include \"textflag.h\"\n\n")
	s.WriteString("// The elementwise kernels of cpu/internal/vecgen: see there for how each mirrors its scalar twin.\n")
	s.WriteString("// Registers: CX = vectors left, DI/R8 = outputs, SI/DX/BX = inputs.\n\n")
	for _, n := range names {
		for i := 0; i < 8; i++ {
			fmt.Fprintf(&s, "DATA c_%s<>+%d(SB)/4, $0x%08x\n", n, 4*i, consts[n])
		}
		fmt.Fprintf(&s, "GLOBL c_%s<>(SB), RODATA|NOPTR, $32\n\n", n)
	}
	for _, tab := range tables {
		for i, v := range tab.bits {
			fmt.Fprintf(&s, "DATA c_%s<>+%d(SB)/4, $0x%08x\n", tab.name, 4*i, v)
		}
		fmt.Fprintf(&s, "GLOBL c_%s<>(SB), RODATA|NOPTR, $64\n\n", tab.name)
	}
	s.Write(asm.Bytes())
	write("vec_amd64.s", s.Bytes())

	var g bytes.Buffer
	g.WriteString(header)
	g.WriteString("//go:build amd64 && !noasm\n\npackage cpu\n\n")
	for _, t := range []*target{avx2, avx512} {
		for _, k := range kernels {
			fmt.Fprintf(&g, "//go:noescape\nfunc %s(n int, o0, o1, i0, i1, i2 *float32, s0, s1 float32)\n\n", k.fn(t))
		}
	}
	for _, t := range []*target{avx2, avx512} {
		fmt.Fprintf(&g, "// vec%s lists the %d-lane kernels by vecKernel.\nvar vec%s = [vkCount]vecFunc{\n", t.name, t.lanes, t.name)
		for _, k := range kernels {
			fmt.Fprintf(&g, "vk%s: %s,\n", k.name, k.fn(t))
		}
		g.WriteString("}\n\n")
	}
	write("vec_amd64.go", gofmt(g.Bytes()))

	var ids bytes.Buffer
	ids.WriteString(header)
	ids.WriteString("package cpu\n\n// The kernels of cpu/internal/vecgen, by name.\nconst (\n")
	for i, k := range kernels {
		if i == 0 {
			fmt.Fprintf(&ids, "vk%s vecKernel = iota // %s\n", k.name, k.doc)
		} else {
			fmt.Fprintf(&ids, "vk%s // %s\n", k.name, k.doc)
		}
	}
	ids.WriteString("vkCount\n)\n")
	write("vec_kernels.go", gofmt(ids.Bytes()))
}

func gofmt(b []byte) []byte {
	out, err := format.Source(b)
	if err != nil {
		log.Fatalf("gofmt: %v\n%s", err, b)
	}
	return out
}

func write(name string, b []byte) {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := os.WriteFile(dir+"/"+name, b, 0o644); err != nil {
		log.Fatal(err)
	}
}
