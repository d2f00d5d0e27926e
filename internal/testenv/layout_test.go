package testenv

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/torchlean-go/torchlean"

// TestLayoutInvariants checks the invariants of DESIGN.md: cpu, ptx and driver import nothing
// from the module (their tests may use internal/testenv); unsafe and purego appear only in driver; autograd never imports driver, ptx
// or cpu; no file imports "C"; the top level holds only the documented entries.
func TestLayoutInvariants(t *testing.T) {
	root := "../.."
	allowed := []string{"go.mod", "go.sum", "driver", "ptx", "ops", "autograd", "cpu", "internal", "examples",
		"README.md", "BENCHMARKS.md", ".ci", ".gitignore", "LICENSE", ".git", ".gpu", ".whl"}
	for _, name := range topLevel(t, root) {
		if !slices.Contains(allowed, name) {
			t.Errorf("unexpected top-level entry %s", name)
		}
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".gpu" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		pkg := filepath.ToSlash(filepath.Dir(rel))
		top := strings.SplitN(pkg, "/", 2)[0]
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case p == "C":
				t.Errorf("%s imports \"C\"", rel)
			case (p == "unsafe" || strings.HasPrefix(p, "github.com/ebitengine/purego")) && top != "driver":
				t.Errorf("%s imports %s (only driver may)", rel, p)
			case p == module+"/internal/testenv" && strings.HasSuffix(path, "_test.go"):
				// The test guards and the readers of the CUDA sources serve every package's tests.
			case strings.HasPrefix(p, module+"/") && (top == "cpu" || top == "ptx" || top == "driver"):
				t.Errorf("%s imports %s (%s imports nothing from the module)", rel, p, top)
			case top == "internal" && strings.HasPrefix(p, module+"/") && !strings.HasPrefix(p, module+"/internal/"):
				t.Errorf("%s imports %s (internal helpers import no project package)", rel, p)
			case top == "autograd" && (p == module+"/driver" || p == module+"/ptx" || p == module+"/cpu"):
				t.Errorf("%s imports %s (autograd goes through ops)", rel, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// topLevel returns the top-level entries of the project: those git tracks (so that a user's
// untracked files, such as a plot an example wrote, do not count), or, without git, every entry.
func topLevel(t *testing.T, root string) []string {
	if out, err := exec.Command("git", "-C", root, "ls-files").Output(); err == nil && len(out) > 0 {
		var names []string
		for _, path := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if name := strings.SplitN(path, "/", 2)[0]; !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		return names
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
