package ptx

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/internal/testenv"
)

// The arithmetic contract's shared constants (DESIGN.md, "Arithmetic contract", point 7): every
// constant that shapes a kernel's arithmetic or launch is defined in its CUDA source and in its
// Go twin; these tests read both. The CUDA side is read by
// internal/testenv's evaluator (testenv.CUDADefines).

// TestSharedConstants checks MatmulLaunch's tile configurations against the kernels'. Launch
// only: every output has one owner thread that accumulates K in ascending order whatever the
// family (the bits never depend on it), but a block of other than the kernel's thread count
// would leave parts of its tiles unloaded or uncomputed.
func TestSharedConstants(t *testing.T) {
	// matmul_tiny.cu states its tile as macros.
	testenv.CheckCUDAConstants(t, []testenv.CUDAConstant{
		{Files: "matmul_tiny.cu", Expr: "MT_TILE", GoName: "matmulTinyRows", Go: matmulTinyRows},
		{Files: "matmul_tiny.cu", Expr: "MT_TILE", GoName: "matmulTinyCols", Go: matmulTinyCols},
		{Files: "matmul_tiny.cu", Expr: "MT_THREADS", GoName: "matmulTinyThreads", Go: matmulTinyThreads},
	})
	for _, k := range []*Kernel{MatmulTinyNN, MatmulTinyNT, MatmulTinyTN, MatmulTinyTT} {
		if k.Module != MatmulTiny || !strings.HasPrefix(k.Name, "matmul_t_") {
			t.Errorf("kernel %s of module %s is not an MT_ENTRY of matmul_tiny.cu", k.Name, k.Module)
		}
	}

	// matmul.cu and matmul_narrow.cu state theirs as the arguments of MM_FAMILY(prefix, BM, BN,
	// BK, WM, WN, TM, TN, MINB) lines (template arguments of mm_body, no macros): they are read
	// with regular expressions, by the parameter names of MM_FAMILY's #define, and the threads
	// per block are the first argument of MM_ENTRY's __launch_bounds__, (BM / WM) * (BN / WN) * 32,
	// evaluated with them.
	src, err := os.ReadFile("matmul.cu")
	if err != nil {
		t.Fatal(err)
	}
	def := regexp.MustCompile(`(?m)^#define MM_FAMILY\(([^)]*)\)`).FindSubmatch(src)
	bounds := regexp.MustCompile(`(?m)^#define MM_ENTRY\((?:.*\\\n)*?.*__launch_bounds__\((.+),\s*\w+\)`).FindSubmatch(src)
	if def == nil || bounds == nil {
		t.Fatalf("matmul.cu: no #define MM_FAMILY(...) or no __launch_bounds__(threads, MINB) in #define MM_ENTRY")
	}
	params := strings.Split(string(def[1]), ",")
	for i := range params {
		params[i] = strings.TrimSpace(params[i])
	}
	families := map[string]map[string]float64{} // prefix -> BM, BN, ... and threads
	familyFile := map[string]string{}
	for _, file := range []string{"matmul.cu", "matmul_narrow.cu"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^MM_FAMILY\(([^)]*)\)`).FindAllSubmatch(src, -1) {
			args := strings.Split(string(m[1]), ",")
			if len(args) != len(params) {
				t.Fatalf("%s: MM_FAMILY(%s) has %d arguments, its #define %d", file, m[1], len(args), len(params))
			}
			env := map[string]float64{}
			for i, a := range args[1:] {
				v, ok := testenv.CUDAExpr(a, nil)
				if !ok {
					t.Fatalf("%s: MM_FAMILY(%s): argument %s = %s is not a number", file, m[1], params[i+1], a)
				}
				env[params[i+1]] = v
			}
			threads, ok := testenv.CUDAExpr(string(bounds[1]), env)
			if !ok {
				t.Fatalf("matmul.cu: MM_ENTRY's __launch_bounds__(%s, ...) does not evaluate with %v", bounds[1], env)
			}
			env["threads"] = threads
			prefix := strings.TrimSpace(args[0])
			families[prefix], familyFile[prefix] = env, file
		}
	}
	for _, f := range []struct {
		prefix, goName      string
		kernels             [4]*Kernel
		rows, cols, threads int
	}{
		{"matmul", "matmulLarge", [4]*Kernel{MatmulNN, MatmulNT, MatmulTN, MatmulTT}, matmulLargeRows, matmulLargeCols, matmulLargeThreads},
		{"matmul_s", "matmulSmall", [4]*Kernel{MatmulSmallNN, MatmulSmallNT, MatmulSmallTN, MatmulSmallTT}, matmulSmallRows, matmulSmallCols, matmulSmallThreads},
		{"matmul_n", "matmulNarrow", [4]*Kernel{MatmulNarrowNN, MatmulNarrowNT, MatmulNarrowTN, MatmulNarrowTT}, matmulNarrowRows, matmulNarrowCols, matmulNarrowThreads},
	} {
		env, ok := families[f.prefix]
		if !ok {
			t.Errorf("no MM_FAMILY(%s, ...) in matmul.cu or matmul_narrow.cu", f.prefix)
			continue
		}
		file := familyFile[f.prefix]
		for i, k := range f.kernels {
			if want := f.prefix + "_" + [4]string{"nn", "nt", "tn", "tt"}[i]; k.Name != want || string(k.Module)+".cu" != filepath.Base(file) {
				t.Errorf("kernel %s of module %s, want %s of %s (MM_FAMILY(%s, ...))", k.Name, k.Module, want, file, f.prefix)
			}
		}
		for _, c := range []struct {
			cuda, goName string
			goValue      int
		}{{"BM", "Rows", f.rows}, {"BN", "Cols", f.cols}, {"threads", "Threads", f.threads}} {
			if env[c.cuda] != float64(c.goValue) {
				t.Errorf("%s: MM_FAMILY(%s, ...) has %s = %v, but MatmulLaunch's %s%s = %d",
					file, f.prefix, c.cuda, env[c.cuda], f.goName, c.goName, c.goValue)
			}
		}
	}
}

// The evaluator: a verbatim copy of internal/testenv/cuconst.go's region (TestCUDADefinesCopies).
