package testenv

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// CUDADefines reads the CUDA sources files (paths relative to the test's package directory, e.g.
// "../ptx/reduce.cu"), in the order given, and returns the value of every object-like
// `#define NAME expr` whose expr is a numeric literal or an arithmetic expression (+ - * /, unary
// + and -, parentheses) of literals and of names defined before it in these files. The tests of
// the arithmetic contract (DESIGN.md, "Arithmetic contract", point 7) compare these values with
// the Go twins' constants (TestSharedConstants in cpu, ops and ptx).
//
// Literals are C's: decimal, octal, hexadecimal and float, their suffixes (u, U, l, L, ULL...; f
// and F on floats) stripped; a float literal with the f suffix is the float32 value C gives it.
// Arithmetic follows C where it matters here: / of two integers truncates toward zero;
// everything is computed in float64 (exact for integers up to 2^53). Comments are ignored, and
// lines continued with a backslash are joined. Macros with arguments, empty macros and macros of
// any other content (casts, calls such as __uint_as_float(...), other operators, names not
// defined numerically before) are left out of the map. Conditionals are not evaluated: every
// #define line counts, and #undef removes a name. A file that cannot be read fails the test
// (t.Fatalf), and so does a name defined twice with different values.
func CUDADefines(t testing.TB, files ...string) map[string]float64 {
	t.Helper()
	d, err := cuDefines(files...)
	if err != nil {
		t.Fatalf("CUDADefines: %v", err)
	}
	return d
}

// CUDAExpr evaluates expr, a C arithmetic expression of the form CUDADefines accepts as a
// #define's value, with the names in env (a value without a fractional part counts as an
// integer for C's integer division). It reports false for any other expression.
func CUDAExpr(expr string, env map[string]float64) (float64, bool) { return cuExpr(expr, env) }

// CheckCUDAConstants fails the test (t.Errorf) for every row whose expression cannot be evaluated
// (a macro missing, or not numeric, in its files) or differs from the Go twin's value; a file
// that cannot be read fails it at once (t.Fatalf).
func CheckCUDAConstants(t testing.TB, rows []CUDAConstant) {
	t.Helper()
	cuCheckConstants(t, rows)
}

// CUDAConstant is one row of a table of constants defined on both sides of the arithmetic
// contract: a value of the CUDA sources (a macro, or a C expression of macros) and its Go twin.
type CUDAConstant struct {
	Files   string  // the CUDA sources that define the macros, space-separated, in include order
	Expr    string  // a macro name, or a C expression of macros (as cuDefines reads a value)
	GoName  string  // the Go twin's name, for messages
	Go      float64 // the Go twin's value
	Float32 bool    // compare the two as float32 values
}

// cuCheckConstants fails t (Errorf) for every row whose expression cannot be evaluated with the
// macros of its files or differs from the Go twin's value; an unreadable file fails it at once.
func cuCheckConstants(t testing.TB, rows []CUDAConstant) {
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
