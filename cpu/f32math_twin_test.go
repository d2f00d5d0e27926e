package cpu

import (
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// goConstants lists every float32 constant of the algorithms under the name that the CUDA
// twin uses after its TLF_ prefix.
var goConstants = map[string]float32{
	"log2e": log2e, "magic": magic, "ln2Hi": ln2Hi, "ln2Lo": ln2Lo,
	"expHi": expHi, "expLo": expLo, "expMid": expMid, "tanhHi": tanhHi,
	"two23": two23, "maxF32": maxF32,
	"expQ0": expQ0, "expQ1": expQ1, "expQ2": expQ2, "expQ3": expQ3, "expQ4": expQ4,
	"logL1": logL1, "logL2": logL2, "logL3": logL3, "logL4": logL4,
	"sinS0h": sinS0h, "sinS0l": sinS0l, "sinS1": sinS1, "sinS2": sinS2, "sinS3": sinS3,
	"sinS4": sinS4, "sinS5": sinS5,
	"cosC1": cosC1, "cosC1h": cosC1h, "cosC1l": cosC1l, "cosC2": cosC2, "cosC3": cosC3,
	"cosC4": cosC4, "cosC5": cosC5,
	"veltkamp": veltkamp,
}

const cuhPath = "../ptx/f32math.cuh"

// TestCUDAConstants checks that ptx/f32math.cuh defines TLF_<name> as __uint_as_float(bits)
// with exactly the bits of each Go constant, and nothing else.
func TestCUDAConstants(t *testing.T) {
	src, err := os.ReadFile(cuhPath)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^#define TLF_(\w+) __uint_as_float\(0x([0-9a-f]{8})u\)$`)
	seen := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		name := m[1]
		bits, _ := strconv.ParseUint(m[2], 16, 32)
		v, ok := goConstants[name]
		if !ok {
			t.Errorf("f32math.cuh: TLF_%s has no Go constant %s", name, name)
			continue
		}
		seen[name] = true
		if math.Float32bits(v) != uint32(bits) {
			t.Errorf("TLF_%s = 0x%08x, Go %s = 0x%08x", name, bits, name, math.Float32bits(v))
		}
	}
	for name := range goConstants {
		if !seen[name] {
			t.Errorf("f32math.cuh lacks #define TLF_%s", name)
		}
	}
	if n := strings.Count(string(src), "#define TLF_"); n != len(seen)+1 { // +1: TLF_CANONICAL_NAN_BITS
		t.Errorf("f32math.cuh has %d TLF_ defines, %d match the Go constants", n, len(seen))
	}
	if !strings.Contains(string(src), "#define TLF_CANONICAL_NAN_BITS 0x7fffffffu") ||
		CanonicalNaNBits != 0x7fffffff {
		t.Error("canonical NaN bits differ")
	}
	// Only the permitted operations: every call is to a tl_/tlf_ function of the header or to
	// one of four intrinsics (bit casts, and the correctly rounded fma and sqrt of tl_fmaf and
	// tl_sqrtf); no CUDA math library function or approximate intrinsic.
	code := regexp.MustCompile(`//.*`).ReplaceAllString(string(src), "")
	allowed := map[string]bool{"__uint_as_float": true, "__float_as_uint": true, "__fmaf_rn": true,
		"__fsqrt_rn": true, "if": true, "switch": true, "return": true, "defined": true}
	for _, m := range regexp.MustCompile(`\b([A-Za-z_]\w*)\s*\(`).FindAllStringSubmatch(code, -1) {
		n := m[1]
		if allowed[n] || strings.HasPrefix(n, "tl_") || strings.HasPrefix(n, "tlf_") {
			continue
		}
		t.Errorf("f32math.cuh calls %s(...): only tl_/tlf_ functions and bit-cast, fma, sqrt intrinsics are allowed", n)
	}
	for _, n := range []string{"__fmaf_rn", "__fsqrt_rn"} {
		if c := strings.Count(code, n+"("); c != 1 {
			t.Errorf("f32math.cuh uses %s %d times, want once (in tl_fmaf / tl_sqrtf)", n, c)
		}
	}
}

// TestNoFusableProducts enforces the Go half of the no-contraction rule: in the package's
// non-test sources every floating-point multiplication must be the direct operand of a
// float32(...) or float64(...) conversion, which the Go spec guarantees to round (forbidding
// fusion into an fma even across statements), and *= is not used on floats.
func TestNoFusableProducts(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("type-checking the sources needs the go command (absent on GPU machines)")
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		// Only the files of this build (simd_amd64.go and simd_other.go declare the same
		// functions under opposite build constraints).
		if ok, err := build.Default.MatchFile(".", name); err != nil {
			t.Fatal(err)
		} else if !ok {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("cpu", fset, files, info); err != nil {
		t.Fatal(err)
	}
	isFloat := func(e ast.Expr) bool {
		tv, ok := info.Types[e]
		if !ok || tv.Value != nil { // constants are folded exactly, never fused
			return false
		}
		b, ok := tv.Type.Underlying().(*types.Basic)
		return ok && b.Info()&types.IsFloat != 0
	}
	for _, f := range files {
		wrapped := map[ast.Expr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && len(call.Args) == 1 {
				if id, ok := call.Fun.(*ast.Ident); ok && (id.Name == "float32" || id.Name == "float64") {
					arg := call.Args[0]
					for {
						p, ok := arg.(*ast.ParenExpr)
						if !ok {
							break
						}
						arg = p.X
					}
					wrapped[arg] = true
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			switch e := n.(type) {
			case *ast.BinaryExpr:
				if e.Op == token.MUL && !wrapped[e] && isFloat(e) {
					t.Errorf("%s: product not wrapped in float32(...): fusable into an fma", fset.Position(e.Pos()))
				}
			case *ast.AssignStmt:
				if e.Tok == token.MUL_ASSIGN && isFloat(e.Lhs[0]) {
					t.Errorf("%s: *= is fusable into an fma", fset.Position(e.Pos()))
				}
			}
			return true
		})
	}
}
