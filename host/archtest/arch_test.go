// Package archtest holds the host's structural rules as tests (issue 30:
// one request core in small parts). They were met once and drifted back
// as later work added code (host/server reached 1,549 lines, five
// functions passed 100 lines); a rule a test checks does not drift. The
// rule on vocabulary packages' dependencies is host/validate's
// TestVocabularyDeps.
package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostDir is host/, from this package's directory.
const hostDir = ".."

// goFiles calls fn with every non-test Go file below dir.
func goFiles(t *testing.T, dir string, fn func(path string)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			fn(path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// No function (declared or literal) in host/ is over 100 lines: a
// function that long does several things, each of which deserves a name
// and a test.
func TestNoFunctionOver100Lines(t *testing.T) {
	const most = 100
	fset := token.NewFileSet()
	n := 0
	goFiles(t, hostDir, func(path string) {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		ast.Inspect(f, func(node ast.Node) bool {
			var body *ast.BlockStmt
			name := "a function literal"
			switch x := node.(type) {
			case *ast.FuncDecl:
				body, name = x.Body, x.Name.Name
			case *ast.FuncLit:
				body = x.Body
			}
			if body == nil {
				return true
			}
			n++
			start, end := fset.Position(node.Pos()), fset.Position(body.Rbrace)
			if lines := end.Line - start.Line + 1; lines > most {
				t.Errorf("%s:%d: %s is %d lines (at most %d): split it along its steps", path, start.Line, name, lines, most)
			}
			return true
		})
	})
	if n < 1000 {
		t.Fatalf("read only %d functions below %s: the walk is not reading host/", n, hostDir)
	}
}

// host/server is the HTTP glue (parse, call, write); what grows there is
// a job for a package of its own.
func TestServerIsGlue(t *testing.T) {
	const most = 1500
	lines := 0
	goFiles(t, filepath.Join(hostDir, "server"), func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines += strings.Count(string(b), "\n")
	})
	if lines == 0 || lines > most {
		t.Fatalf("host/server has %d non-test lines, want 1 to %d", lines, most)
	}
}
