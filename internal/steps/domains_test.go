package steps

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The domains of the step library cannot reach into each other: a domain's state (the T of
// its `scenario.NewKey[T]`) has its fields touched only by the file that declares it; every
// other file goes through that domain's methods. `Scene` is exempt: set once in
// BeforeScenario and read by every domain (docs/steps.md). Each package of the tree is
// checked on its own: across packages the compiler keeps unexported fields out of reach.
func TestDomainsTouchOnlyTheirOwnState(t *testing.T) {
	for _, dir := range stepDirs(t) {
		fset, files := parseDir(t, dir)
		for _, v := range stateViolations(t, dir, fset, files) {
			t.Error(v)
		}
	}
}

// The checker itself: a planted read and write of another file's state are both found, and
// the owner's own access and a method call are not.
func TestStateCheckerFindsAPlantedViolation(t *testing.T) {
	fset := token.NewFileSet()
	src := map[string]string{
		"a.go": `package steps
import "github.com/ksqlflow/flowtest/internal/harness/scenario"
type aState struct{ n int }
var aKey = scenario.NewKey[aState]("a")
func (s *aState) count() int { return s.n }
func own(st *scenario.State) { aKey.Of(st).n++ }
`,
		"b.go": `package steps
import "github.com/ksqlflow/flowtest/internal/harness/scenario"
func other(st *scenario.State) int {
	aKey.Of(st).n = 2
	return aKey.Of(st).count() + aKey.Of(st).n
}
`,
	}
	var files []*ast.File
	for _, name := range []string{"a.go", "b.go"} {
		f, err := parser.ParseFile(fset, name, src[name], parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	assert.Equal(t, []string{
		"b.go:4: touches field n of aState, the state of a.go (use a method of that domain)",
		"b.go:5: touches field n of aState, the state of a.go (use a method of that domain)",
	}, stateViolations(t, ".", fset, files))
}

// The package doc of every package of the tree lists exactly its non-test files, and none
// of them is over 700 lines (a file that grows past it holds more than one domain).
func TestPackageDocListsEveryFile(t *testing.T) {
	for _, dir := range stepDirs(t) {
		packageDocListsEveryFile(t, dir)
	}
}

func packageDocListsEveryFile(t *testing.T, dir string) {
	fset, files := parseDir(t, dir)
	var listed []string
	for _, f := range files {
		if f.Doc == nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(f.Doc.Text()))
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) > 0 && strings.HasSuffix(fields[0], ".go") && strings.HasPrefix(sc.Text(), "\t") {
				listed = append(listed, fields[0])
			}
		}
	}
	var have []string
	for _, f := range files {
		name := filepath.Base(fset.Position(f.Pos()).Filename)
		have = append(have, name)
		lines := fset.File(f.Pos()).LineCount()
		assert.LessOrEqual(t, lines, 700, "%s has %d lines: split it by domain", name, lines)
	}
	slices.Sort(listed)
	slices.Sort(have)
	assert.Equal(t, have, listed, "the package doc lists the files of the package in %s", dir)
}

// stepDirs are the directories of the step library's packages: this one and every one below.
func stepDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return err
	})
	require.NoError(t, err)
	return dirs
}

// parseDir parses the non-test Go files of dir, for every GOOS (the package has no
// platform-specific files; if it gets some, type-checking them together fails loudly).
func parseDir(t *testing.T, dir string) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	require.NotEmpty(t, files)
	return fset, files
}

// stateViolations type-checks files as the package in dir and lists every field selection (or
// composite literal) of a domain state type outside the file that declares it.
func stateViolations(t *testing.T, dir string, fset *token.FileSet, files []*ast.File) []string {
	t.Helper()
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", exportData(t, dir))}
	pkg, err := conf.Check(path.Join("github.com/ksqlflow/flowtest/internal/steps", filepath.ToSlash(dir)), fset, files, info)
	require.NoError(t, err)

	owner := map[*types.TypeName]string{} // state type -> the file that declares it
	for _, obj := range info.Defs {
		v, ok := obj.(*types.Var)
		if !ok || v.Parent() != pkg.Scope() {
			continue
		}
		if state := keyedState(v.Type()); state != nil && state.Name() != "Scene" {
			owner[state] = filepath.Base(fset.Position(state.Pos()).Filename)
		}
	}
	stateOf := func(typ types.Type) *types.TypeName {
		if p, ok := typ.(*types.Pointer); ok {
			typ = p.Elem()
		}
		if n, ok := typ.(*types.Named); ok {
			if _, ok := owner[n.Obj()]; ok {
				return n.Obj()
			}
		}
		return nil
	}
	var out []string
	for _, f := range files {
		file := filepath.Base(fset.Position(f.Pos()).Filename)
		report := func(pos token.Pos, what string, state *types.TypeName) {
			out = append(out, fmt.Sprintf("%s:%d: touches %s of %s, the state of %s (use a method of that domain)",
				file, fset.Position(pos).Line, what, state.Name(), owner[state]))
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				sel := info.Selections[n]
				if sel == nil || sel.Kind() != types.FieldVal {
					return true
				}
				if state := stateOf(sel.Recv()); state != nil && owner[state] != file {
					report(n.Sel.Pos(), "field "+n.Sel.Name, state)
				}
			case *ast.CompositeLit:
				if state := stateOf(info.Types[n].Type); state != nil && owner[state] != file {
					report(n.Pos(), "a literal", state)
				}
			}
			return true
		})
	}
	slices.Sort(out)
	return out
}

// keyedState is T when typ is *scenario.Key[T] and T is a type of this package.
func keyedState(typ types.Type) *types.TypeName {
	p, ok := typ.(*types.Pointer)
	if !ok {
		return nil
	}
	key, ok := p.Elem().(*types.Named)
	if !ok || key.Obj().Name() != "Key" || key.Obj().Pkg().Path() != "github.com/ksqlflow/flowtest/internal/harness/scenario" || key.TypeArgs().Len() != 1 {
		return nil
	}
	if state, ok := key.TypeArgs().At(0).(*types.Named); ok {
		return state.Obj()
	}
	return nil
}

// exportData finds the compiled export data of the imports of the package in dir with
// `go list -export`, for the gc importer.
func exportData(t *testing.T, dir string) func(path string) (io.ReadCloser, error) {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", "./"+filepath.ToSlash(dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list -export: %s", stderr.String())
	files := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, "\t"); ok && file != "" {
			files[path] = file
		}
	}
	return func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s (not a dependency of the package in %s)", path, dir)
		}
		return os.Open(file)
	}
}
