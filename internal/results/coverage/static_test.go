package coverage

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// stepsSource is the step library's non-test source, parsed.
type stepsSource struct {
	fset  *token.FileSet
	files []*ast.File
	funcs map[string][]ast.Node // top-level functions, methods and package variables by name
}

func parseSteps(t *testing.T) *stepsSource {
	t.Helper()
	src := &stepsSource{fset: token.NewFileSet(), funcs: map[string][]ast.Node{}}
	root := filepath.Join("..", "..", "steps")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(src.fset, p, nil, 0)
		if err != nil {
			return err
		}
		src.files = append(src.files, f)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				src.funcs[d.Name.Name] = append(src.funcs[d.Name.Name], d)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if v, ok := s.(*ast.ValueSpec); ok {
						for _, n := range v.Names {
							src.funcs[n.Name] = append(src.funcs[n.Name], v)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(src.files) < 20 {
		t.Fatalf("only %d files of the step library parsed", len(src.files))
	}
	return src
}

// literals are the string constants written in n.
func literals(n ast.Node) []string {
	var out []string
	ast.Inspect(n, func(x ast.Node) bool {
		if l, ok := x.(*ast.BasicLit); ok && l.Kind == token.STRING {
			if s, err := strconv.Unquote(l.Value); err == nil {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}

// subjectsIn are the universe's subjects n can produce: those written whole, and a written
// prefix ("joblog." + field) joined to any string written in n ("status").
func subjectsIn(n ast.Node) []string {
	lits := literals(n)
	var prefixes []string
	ast.Inspect(n, func(x ast.Node) bool {
		if b, ok := x.(*ast.BinaryExpr); ok && b.Op == token.ADD {
			if l, ok := b.X.(*ast.BasicLit); ok && l.Kind == token.STRING {
				if s, err := strconv.Unquote(l.Value); err == nil && strings.HasSuffix(s, ".") {
					prefixes = append(prefixes, s)
				}
			}
		}
		return true
	})
	var out []string
	for _, l := range lits {
		if InUniverse(l) {
			out = append(out, l)
		}
		for _, p := range prefixes {
			if InUniverse(p + l) {
				out = append(out, p+l)
			}
		}
	}
	return out
}

// calledNames are the names of the functions, methods and variables an expression uses.
func calledNames(e ast.Expr) []string {
	var out []string
	ast.Inspect(e, func(x ast.Node) bool {
		switch x := x.(type) {
		case *ast.Ident:
			out = append(out, x.Name)
		case *ast.SelectorExpr:
			out = append(out, x.Sel.Name)
		}
		return true
	})
	return out
}

// staticRead is what the step library's assertions can read, from its source: every
// subject written as an argument of On, and for an argument computed at run time, the
// subjects its enclosing function or the functions and variables it uses can produce (an
// upper bound: the run's map is exact). Literal arguments that are no subject are returned
// as bad, with their position.
func (src *stepsSource) staticRead() (read map[string]bool, bad []string, calls int) {
	read = map[string]bool{}
	for _, f := range src.files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(x ast.Node) bool {
				call, ok := x.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "On" {
					return true
				}
				calls++
				for _, arg := range call.Args {
					if l, ok := arg.(*ast.BasicLit); ok && l.Kind == token.STRING {
						s, _ := strconv.Unquote(l.Value)
						if !Valid(s) {
							bad = append(bad, src.fset.Position(l.Pos()).String()+": "+s)
						}
						read[s] = true
						continue
					}
					for _, s := range subjectsIn(fn) {
						read[s] = true
					}
					for _, name := range calledNames(arg) {
						for _, n := range src.funcs[name] {
							for _, s := range subjectsIn(n) {
								read[s] = true
							}
						}
					}
				}
				return true
			})
		}
	}
	return read, bad, calls
}

// Every subject an assertion names in the source is a subject of the universe or of an
// observed namespace.
func TestStepsNameOnlyKnownSubjects(t *testing.T) {
	_, bad, calls := parseSteps(t).staticRead()
	if calls < 200 {
		t.Fatalf("only %d On(...) calls found in internal/steps", calls)
	}
	for _, b := range bad {
		t.Errorf("%s is not a subject (docs/coverage.md names them)", b)
	}
}

// A subject of the universe that no assertion of the step library can read must have a
// reason in docs/coverage.md: a new unread subject (a field added to the contract, an
// assertion removed) fails here without a full run.
func TestEveryUnreadSubjectHasAReason(t *testing.T) {
	read, _, _ := parseSteps(t).staticRead()
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "coverage.md"))
	if err != nil {
		t.Fatal(err)
	}
	reasons, err := ParseReasons(md)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, s := range Universe() {
		if !read[s.Name] && reasons.For(s.Name) == "" {
			missing = append(missing, s.Name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d subjects no assertion reads have no reason in docs/coverage.md's %q table:\n%s",
			len(missing), reasonsHeading, strings.Join(missing, "\n"))
	}
	t.Logf("statically read: %d of %d subjects", countIn(read), len(Universe()))
}

func countIn(read map[string]bool) int {
	n := 0
	for _, s := range Universe() {
		if read[s.Name] {
			n++
		}
	}
	return n
}

// The static reading sees a subject written whole, one made of a written prefix and a
// written field, and one a helper returns; and refuses a literal that is no subject.
func TestStaticReadFollowsPrefixesAndHelpers(t *testing.T) {
	src := &stepsSource{fset: token.NewFileSet(), funcs: map[string][]ast.Node{}}
	f, err := parser.ParseFile(src.fset, "x.go", `package x
func a() { st.On("state.NETWORK_RUN.status").Equal() }
func b() { for _, c := range []string{"status", "job_id"} { st.On("joblog."+c).Equal() } }
func c() { st.On(exitOf("plan")).Equal(); st.On("state.NODE_STATE.colour").Equal() }
func exitOf(s string) string { if s == "plan" { return "exit.plan" }; return "" }
`, 0)
	if err != nil {
		t.Fatal(err)
	}
	src.files = []*ast.File{f}
	for _, d := range f.Decls {
		fd := d.(*ast.FuncDecl)
		src.funcs[fd.Name.Name] = append(src.funcs[fd.Name.Name], fd)
	}
	read, bad, calls := src.staticRead()
	var got []string
	for s := range read {
		got = append(got, s)
	}
	slices.Sort(got)
	want := []string{"exit.plan", "joblog.job_id", "joblog.status", "state.NETWORK_RUN.status", "state.NODE_STATE.colour"}
	if !slices.Equal(got, want) || calls != 4 || len(bad) != 1 {
		t.Errorf("read %v (want %v), %d calls, bad %v", got, want, calls, bad)
	}
}
