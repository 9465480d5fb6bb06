// Package archtest holds the test that keeps the module's imports to the
// table in docs/architecture.md. It has no code of its own.
package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "watchdog"

// TestImportsFollowArchitecture fails when a package imports a package of
// the module that its row in docs/architecture.md does not allow, or when
// a package has no row. The table is parsed from the page itself, so the
// page and the rule cannot drift apart.
func TestImportsFollowArchitecture(t *testing.T) {
	root := moduleRoot(t)
	f, err := os.Open(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	allowed, err := parseTable(f)
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	pkgs := listPackages(t, root)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: it is not seeing the module", len(pkgs))
	}
	for _, p := range pkgs {
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		may, ok := allowed[name]
		if !ok {
			t.Errorf("package %s has no row in docs/architecture.md: add one saying its job and what it may import", name)
			continue
		}
		imports, what := p.Imports, "imports"
		if p.testsOnly() {
			// A package of tests only (test/e2e, deploy) has no production
			// imports to hold; its row says what its tests import.
			imports, what = append(slices.Clone(p.TestImports), p.XTestImports...), "tests import"
		}
		for _, imp := range imports {
			dep, ours := strings.CutPrefix(imp, module+"/")
			if ours && !slices.Contains(may, dep) {
				t.Errorf("%s %s %s, which docs/architecture.md does not allow (may import: %s)", name, what, dep, orNothing(may))
			}
		}
	}
}

// vocabulary is what docs/architecture.md lets metrics use of transitions:
// the vocabularies its labels come from, never the write path.
var vocabulary = []string{"Types", "Lookup", "CanonicalType", "Actors", "Causes"}

// TestMetricsReadsOnlyVocabularies keeps the decision recorded in
// docs/architecture.md: metrics imports transitions for its vocabularies.
func TestMetricsReadsOnlyVocabularies(t *testing.T) {
	dir := filepath.Join(moduleRoot(t), "metrics")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	used := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, isID := sel.X.(*ast.Ident); isID && id.Name == "transitions" {
				used++
				if !slices.Contains(vocabulary, sel.Sel.Name) {
					t.Errorf("%s: metrics uses transitions.%s, which is not a vocabulary (%s)", fset.Position(sel.Pos()), sel.Sel.Name, strings.Join(vocabulary, ", "))
				}
			}
			return true
		})
	}
	if used == 0 {
		t.Fatal("no use of transitions found in metrics: the check is not seeing the source")
	}
}

// TestParseTable pins the table format the real test relies on.
func TestParseTable(t *testing.T) {
	doc := "intro\n\n| package | job | may import |\n| --- | --- | --- |\n" +
		"| `state` | The model. | |\n" +
		"| `cmd/watchdog` | The CLI. | `state`, `store` |\n\nafter | not | a row |\n"
	got, err := parseTable(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"state": nil, "cmd/watchdog": {"state", "store"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parseTable = %v, want %v", got, want)
	}
	if _, err := parseTable(strings.NewReader("no table here\n")); err == nil {
		t.Error("a page without the table parsed")
	}
	if _, err := parseTable(strings.NewReader("| package | job | may import |\n| `a` | x | |\n| `a` | y | |\n")); err == nil {
		t.Error("a package with two rows parsed")
	}
}

// parseTable reads the "| package | job | may import |" table: one row a
// package, names in backquotes, relative to the module path.
func parseTable(r io.Reader) (map[string][]string, error) {
	out := map[string][]string{}
	in := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			if in {
				break // the table ended
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			return nil, fmt.Errorf("table row %q has %d cells, want 3", line, len(cells))
		}
		head := strings.TrimSpace(cells[0])
		if head == "package" {
			in = true
			continue
		}
		if !in || strings.HasPrefix(head, "---") {
			continue
		}
		pkg := strings.Trim(head, "`")
		if _, dup := out[pkg]; dup {
			return nil, fmt.Errorf("package %s has two rows", pkg)
		}
		var may []string
		for _, d := range strings.Split(cells[2], ",") {
			if d = strings.Trim(strings.TrimSpace(d), "`"); d != "" {
				may = append(may, d)
			}
		}
		out[pkg] = may
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no \"| package | job | may import |\" table")
	}
	return out, nil
}

type pkg struct {
	ImportPath   string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// testsOnly reports whether the package is made of tests alone: no Go
// file but its doc.go, and no production import.
func (p pkg) testsOnly() bool {
	for _, f := range p.GoFiles {
		if f != "doc.go" {
			return false
		}
	}
	return len(p.Imports) == 0
}

// listPackages runs `go list -json` over the module: each package's Go
// files and its direct imports, production and test.
func listPackages(t *testing.T, root string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,GoFiles,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(outb))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside the module")
	}
	return filepath.Dir(gomod)
}

func orNothing(list []string) string {
	if len(list) == 0 {
		return "nothing of the module"
	}
	return strings.Join(list, ", ")
}
