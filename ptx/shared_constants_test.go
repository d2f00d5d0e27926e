package ptx

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The arithmetic contract's shared constants (DESIGN.md, "Arithmetic contract", point 7): every
// constant that shapes a kernel's arithmetic or launch is defined in its CUDA source and in its
// Go twin; these tests read both. The CUDA side is read by the evaluator of
// internal/testenv/cuconst.go (testenv.CUDADefines), copied below because this package's files
// import nothing from the module (TestLayoutInvariants); TestCUDADefinesCopies keeps the copy
// verbatim.

// TestSharedConstants checks MatmulLaunch's tile configurations against the kernels'. Launch
// only: every output has one owner thread that accumulates K in ascending order whatever the
// family (the bits never depend on it), but a block of other than the kernel's thread count
// would leave parts of its tiles unloaded or uncomputed.
func TestSharedConstants(t *testing.T) {
	// matmul_tiny.cu states its tile as macros.
	cuCheckConstants(t, []cuConstant{
		{"matmul_tiny.cu", "MT_TILE", "matmulTinyRows", matmulTinyRows, false},
		{"matmul_tiny.cu", "MT_TILE", "matmulTinyCols", matmulTinyCols, false},
		{"matmul_tiny.cu", "MT_THREADS", "matmulTinyThreads", matmulTinyThreads, false},
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
				v, ok := cuExpr(a, nil)
				if !ok {
					t.Fatalf("%s: MM_FAMILY(%s): argument %s = %s is not a number", file, m[1], params[i+1], a)
				}
				env[params[i+1]] = v
			}
			threads, ok := cuExpr(string(bounds[1]), env)
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

// cuconst: begin

// cuConstant is one row of a table of constants shared by a CUDA source and its Go twin.
type cuConstant struct {
	Files   string  // the CUDA sources that define the macros, space-separated, in include order
	Expr    string  // a macro name, or a C expression of macros (as cuDefines reads a value)
	GoName  string  // the Go twin's name, for messages
	Go      float64 // the Go twin's value
	Float32 bool    // compare the two as float32 values
}

// cuCheckConstants fails t (Errorf) for every row whose expression cannot be evaluated with the
// macros of its files or differs from the Go twin's value; an unreadable file fails it at once.
func cuCheckConstants(t testing.TB, rows []cuConstant) {
	t.Helper()
	defs := map[string]map[string]float64{}
	for _, r := range rows {
		d, ok := defs[r.Files]
		if !ok {
			var err error
			if d, err = cuDefines(strings.Fields(r.Files)...); err != nil {
				t.Fatalf("%v", err)
			}
			defs[r.Files] = d
		}
		v, ok := cuExpr(r.Expr, d)
		switch {
		case !ok:
			var missing []string
			for _, name := range cuNameRE.FindAllString(r.Expr, -1) {
				if _, ok := d[name]; !ok {
					missing = append(missing, name)
				}
			}
			t.Errorf("%s: cannot evaluate %s (no numeric #define of %v) for the Go twin %s = %v",
				r.Files, r.Expr, missing, r.GoName, r.Go)
		case r.Float32 && float32(v) != float32(r.Go):
			t.Errorf("%s: %s = %v (float32), but the Go twin %s = %v", r.Files, r.Expr, float32(v), r.GoName, float32(r.Go))
		case !r.Float32 && v != r.Go:
			t.Errorf("%s: %s = %v, but the Go twin %s = %v", r.Files, r.Expr, v, r.GoName, r.Go)
		}
	}
}

// cuDefines is CUDADefines returning its failure as an error.
func cuDefines(files ...string) (map[string]float64, error) {
	env := map[string]cuValue{}
	where := map[string]string{}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		for _, d := range cuDirectives(string(src)) {
			switch d.kind {
			case "undef":
				delete(env, d.name)
				delete(where, d.name)
			case "define":
				v, ok := cuEval(d.body, env)
				if !ok {
					continue
				}
				if old, dup := env[d.name]; dup && old != v {
					return nil, fmt.Errorf("%s:%d redefines %s as %g (%s defines it as %g)",
						file, d.line, d.name, v.v, where[d.name], old.v)
				}
				env[d.name] = v
				where[d.name] = fmt.Sprintf("%s:%d", file, d.line)
			}
		}
	}
	out := make(map[string]float64, len(env))
	for name, v := range env {
		out[name] = v.v
	}
	return out, nil
}

// cuExpr is CUDAExpr.
func cuExpr(expr string, env map[string]float64) (float64, bool) {
	e := make(map[string]cuValue, len(env))
	for name, v := range env {
		e[name] = cuValue{v: v, isInt: v == math.Trunc(v) && !math.IsInf(v, 0)}
	}
	v, ok := cuEval(cuStripComments(expr), e)
	return v.v, ok
}

// cuValue is a value of C arithmetic: an integer or a floating-point number.
type cuValue struct {
	v     float64
	isInt bool
}

// cuDirective is one #define (name, body) or #undef (name) line.
type cuDirective struct {
	kind, name, body string
	line             int
}

var (
	cuDirectiveRE = regexp.MustCompile(`^\s*#\s*(define|undef)\s+([A-Za-z_]\w*)(.*)$`)
	cuNameRE      = regexp.MustCompile(`[A-Za-z_]\w*`)
)

// cuDirectives returns the #define and #undef directives of src, continuation lines joined and
// comments removed (a /* */ comment spanning lines ends the directive's text).
func cuDirectives(src string) []cuDirective {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var out []cuDirective
	for i := 0; i < len(lines); i++ {
		start := i
		text := lines[i]
		for strings.HasSuffix(text, "\\") && i+1 < len(lines) {
			i++
			text = strings.TrimSuffix(text, "\\") + " " + lines[i]
		}
		m := cuDirectiveRE.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		d := cuDirective{kind: m[1], name: m[2], line: start + 1}
		if d.kind == "define" {
			if strings.HasPrefix(m[3], "(") {
				continue // a macro with arguments
			}
			if d.body = strings.TrimSpace(cuStripComments(m[3])); d.body == "" {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

// cuStripComments removes the // and /* */ comments of one logical line (an unterminated /*
// removes the rest).
func cuStripComments(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "//"):
			return b.String()
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			i += 2 + end + 1
			b.WriteByte(' ')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// cuEval evaluates the C expression body with the names of env: its literals are rewritten in Go
// syntax (cuLiterals), the result parsed by go/parser and evaluated by cuEvalNode.
func cuEval(body string, env map[string]cuValue) (cuValue, bool) {
	goExpr, ok := cuLiterals(body)
	if !ok {
		return cuValue{}, false
	}
	e, err := parser.ParseExpr(goExpr)
	if err != nil {
		return cuValue{}, false
	}
	return cuEvalNode(e, env)
}

// cuLiterals rewrites the C numeric literals of s in Go syntax, suffixes stripped; a float
// literal with the f suffix becomes float32(literal), its value in C. It reports false for a
// literal Go cannot read.
func cuLiterals(s string) (string, bool) {
	var b strings.Builder
	isIdent := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			// A preprocessing number: digits, letters, _ and dots, and a sign after e, E, p or P.
			j := i + 1
			for j < len(s) && (isIdent(s[j]) || s[j] == '.' ||
				(s[j] == '+' || s[j] == '-') && strings.IndexByte("eEpP", s[j-1]) >= 0) {
				j++
			}
			lit, isF32, ok := cuLiteral(s[i:j])
			if !ok {
				return "", false
			}
			if isF32 {
				lit = "float32(" + lit + ")"
			}
			b.WriteString(lit)
			i = j
		case isIdent(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			b.WriteString(s[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), true
}

// cuLiteral returns the Go form of one C numeric literal (a preprocessing number), whether it is
// a float with the f suffix, and whether it is a literal at all.
func cuLiteral(lit string) (goLit string, isF32, ok bool) {
	hex := strings.HasPrefix(lit, "0x") || strings.HasPrefix(lit, "0X")
	if hex && !strings.ContainsAny(lit, ".pP") || !hex && !strings.ContainsAny(lit, ".eE") {
		lit = strings.TrimRight(lit, "uUlL") // an integer (Go reads C's octal 0... too)
		_, err := strconv.ParseUint(lit, 0, 64)
		return lit, false, err == nil
	}
	trimmed := strings.TrimRight(lit, "fFlL")
	isF32 = strings.ContainsAny(lit[len(trimmed):], "fF")
	_, err := strconv.ParseFloat(trimmed, 64)
	return trimmed, isF32, err == nil
}

// cuEvalNode evaluates a parsed expression: literals, names of env, unary + and -, + - * /,
// parentheses, and the float32(literal) of cuLiterals.
func cuEvalNode(e ast.Expr, env map[string]cuValue) (cuValue, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		switch e.Kind {
		case token.INT:
			u, err := strconv.ParseUint(e.Value, 0, 64)
			return cuValue{v: float64(u), isInt: true}, err == nil
		case token.FLOAT:
			f, err := strconv.ParseFloat(e.Value, 64)
			return cuValue{v: f}, err == nil
		}
	case *ast.CallExpr: // float32(literal): a float literal with the f suffix
		if fn, ok := e.Fun.(*ast.Ident); ok && fn.Name == "float32" && len(e.Args) == 1 {
			if lit, ok := e.Args[0].(*ast.BasicLit); ok && lit.Kind == token.FLOAT {
				f, err := strconv.ParseFloat(lit.Value, 64)
				return cuValue{v: float64(float32(f))}, err == nil
			}
		}
	case *ast.Ident:
		v, ok := env[e.Name]
		return v, ok
	case *ast.ParenExpr:
		return cuEvalNode(e.X, env)
	case *ast.UnaryExpr:
		x, ok := cuEvalNode(e.X, env)
		switch {
		case ok && e.Op == token.ADD:
			return x, true
		case ok && e.Op == token.SUB:
			return cuValue{v: -x.v, isInt: x.isInt}, true
		}
	case *ast.BinaryExpr:
		x, ok1 := cuEvalNode(e.X, env)
		y, ok2 := cuEvalNode(e.Y, env)
		if !ok1 || !ok2 {
			return cuValue{}, false
		}
		isInt := x.isInt && y.isInt
		switch e.Op {
		case token.ADD:
			return cuValue{v: x.v + y.v, isInt: isInt}, true
		case token.SUB:
			return cuValue{v: x.v - y.v, isInt: isInt}, true
		case token.MUL:
			return cuValue{v: x.v * y.v, isInt: isInt}, true
		case token.QUO:
			if !isInt {
				return cuValue{v: x.v / y.v}, true
			}
			if y.v != 0 {
				return cuValue{v: math.Trunc(x.v / y.v), isInt: true}, true
			}
		}
	}
	return cuValue{}, false
}

// cuconst: end
