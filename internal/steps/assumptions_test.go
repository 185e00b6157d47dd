package steps

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The live assumptions list (docs/live-assumptions.md) is kept true by this test: every code
// and output literal the steps compare against must be named in it, so a new comparison with
// a product code cannot land without someone deciding what backs it. The extraction rule is
// written at the top of the document; the functions below are that rule, and a change to one
// must change the other.

const assumptionsDoc = "../../docs/live-assumptions.md"

// A literal found in a step source or a feature file, and every place it was found.
type foundLiteral struct {
	value  string
	places []string // "file:line"
}

// literalSet is the literals found, by value.
type literalSet map[string]*foundLiteral

func (s literalSet) add(v, place string) {
	f := s[v]
	if f == nil {
		f = &foundLiteral{value: v}
		s[v] = f
	}
	f.places = append(f.places, place)
}

var (
	// Rule G1 / F1: an UPPER_SNAKE token — a run of A–Z, 0–9 and _ that starts with a letter,
	// holds at least one _ between two letters or digits, and is not part of a longer such run.
	upperSnake = regexp.MustCompile(`[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+`)
	// Rule G2 / F2: a whole value that is one upper-case word of two or more characters.
	upperWord = regexp.MustCompile(`^[A-Z][A-Z0-9]+$`)
	// Rule G3: an upper-case word (hyphen allowed inside) directly followed by a colon: the
	// head of a text-output line (`RELEASED:`, `NO-OP:`) or a record-key prefix (`OP:`).
	upperColon = regexp.MustCompile(`[A-Z][A-Z-]*[A-Z]:`)
	// Rule F3: the quoted text a feature step compares output with.
	outputText  = regexp.MustCompile(`(?:line starting with|saying|a message containing|does not mention|encoding) "([^"]*)"`)
	gherkinStep = regexp.MustCompile(`^\s*(?:Given|When|Then|And|But|\*)\s`)
	quoted      = regexp.MustCompile(`"([^"]*)"`)
)

// tokensOf applies G1 and G2 (or F1 and F2) to one value.
func tokensOf(v string) []string {
	var out []string
	for _, loc := range upperSnake.FindAllStringIndex(v, -1) {
		if loc[0] > 0 && isTokenChar(v[loc[0]-1]) || loc[1] < len(v) && isTokenChar(v[loc[1]]) {
			continue // part of a longer run (a lower-case letter next to it is fine: ASSERT_FAILEDx3)
		}
		out = append(out, v[loc[0]:loc[1]])
	}
	if upperWord.MatchString(v) {
		out = append(out, v)
	}
	return out
}

func isTokenChar(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' }

// stepLiterals applies rules G1–G3 to every string literal of every non-test Go file under
// dir (the tree of step packages, whatever its files are called).
func stepLiterals(dir string) (literalSet, error) {
	out := literalSet{}
	add := out.add
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	for _, name := range names {
		file, err := parser.ParseFile(fset, filepath.Join(dir, filepath.FromSlash(name)), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			pos := fset.Position(lit.Pos())
			place := fmt.Sprintf("steps/%s:%d", name, pos.Line)
			for _, t := range tokensOf(v) {
				add(t, place)
			}
			for _, m := range upperColon.FindAllString(v, -1) {
				add(m, place)
			}
			return true
		})
	}
	return out, nil
}

// featureLiterals applies rules F1–F3 to the step lines (quoted values) and table rows
// (cells) of every .feature file under root; descriptions, comments and doc strings are not
// read.
func featureLiterals(root string) (literalSet, error) {
	out := literalSet{}
	add := out.add
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".feature") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		rel, _ := filepath.Rel(filepath.Dir(root), path)
		inDocString := false
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			text := sc.Text()
			trimmed := strings.TrimSpace(text)
			if strings.HasPrefix(trimmed, `"""`) || strings.HasPrefix(trimmed, "```") {
				inDocString = !inDocString
				continue
			}
			place := fmt.Sprintf("%s:%d", filepath.ToSlash(rel), line)
			var values []string
			switch {
			case inDocString:
				continue
			case gherkinStep.MatchString(text):
				for _, m := range quoted.FindAllStringSubmatch(text, -1) {
					values = append(values, m[1])
				}
				for _, m := range outputText.FindAllStringSubmatch(text, -1) {
					add(m[1], place)
				}
			case strings.HasPrefix(trimmed, "|"):
				for _, cell := range strings.Split(strings.Trim(trimmed, "|"), "|") {
					values = append(values, strings.TrimSpace(cell))
				}
			}
			for _, v := range values {
				for _, t := range tokensOf(v) {
					add(t, place)
				}
			}
		}
		return sc.Err()
	})
	return out, err
}

// codeSpans are the texts between backticks of a Markdown document.
func codeSpans(doc string) []string {
	parts := strings.Split(doc, "`")
	var out []string
	for i := 1; i < len(parts); i += 2 {
		out = append(out, parts[i])
	}
	return out
}

// namedIn says whether lit appears in some code span of the document as a whole: not as a
// piece of a longer identifier (RUN in RUNNING does not count).
func namedIn(spans []string, lit string) bool {
	for _, s := range spans {
		for i := 0; ; {
			j := strings.Index(s[i:], lit)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(lit)
			before := start == 0 || !isIdentChar(s[start-1])
			after := end == len(s) || !isIdentChar(s[end])
			if before && after {
				return true
			}
			i = start + 1
		}
	}
	return false
}

func isIdentChar(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

// missingLiterals lists, sorted, every literal of the sets that the document does not name,
// with where each was found.
func missingLiterals(doc string, sets ...literalSet) []string {
	spans := codeSpans(doc)
	var missing []string
	for _, set := range sets {
		for v, f := range set {
			if namedIn(spans, v) {
				continue
			}
			places := f.places
			if len(places) > 3 {
				places = append(places[:3:3], fmt.Sprintf("and %d more", len(f.places)-3))
			}
			missing = append(missing, fmt.Sprintf("%q (found at %s)", v, strings.Join(places, ", ")))
		}
	}
	sort.Strings(missing)
	return missing
}

func TestAssumptionsListNamesEveryComparedLiteral(t *testing.T) {
	doc, err := os.ReadFile(assumptionsDoc)
	if err != nil {
		t.Fatalf("the live assumptions list: %v", err)
	}
	inSteps, err := stepLiterals(".")
	if err != nil {
		t.Fatal(err)
	}
	inFeatures, err := featureLiterals("../../features")
	if err != nil {
		t.Fatal(err)
	}
	// The rule must find what the steps are known to compare, or a broken scan would pass.
	for _, want := range []struct {
		set  literalSet
		name string
		lit  string
	}{
		{inSteps, "steps", "PREPARE_FAILED"},
		{inSteps, "steps", "NETWORK_LOCK_FORCE_RELEASED"},
		{inSteps, "steps", "DONE"},
		{inSteps, "steps", "RELEASED:"},
		{inFeatures, "features", "OWNER_MISMATCH"},
		{inFeatures, "features", "ASSERT_FAILED"},
		{inFeatures, "features", "RESUME: "},
	} {
		if want.set[want.lit] == nil {
			t.Errorf("the extraction rule found no %q in the %s: the scan is broken", want.lit, want.name)
		}
	}
	if n := len(inSteps) + len(inFeatures); n < 150 {
		t.Errorf("the extraction rule found only %d literals: the scan is broken", n)
	}
	for _, m := range missingLiterals(string(doc), inSteps, inFeatures) {
		t.Errorf("docs/live-assumptions.md does not name %s", m)
	}
}

// The rule sees a literal planted in a step source and in a feature file, and the check names
// each with where it was found: the main test cannot pass by finding nothing.
func TestAssumptionsCheckReportsAPlantedLiteral(t *testing.T) {
	dir := t.TempDir()
	src := "package planted\n\nfunc f(s string) bool { return s == \"PLANTED_RESULT_CODE\" || s == \"PLANTEDWORD\" }\n"
	if err := os.WriteFile(filepath.Join(dir, "planted.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "planted_test.go"), []byte("package planted\n\nvar _ = \"IN_A_TEST_FILE\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	feats := filepath.Join(dir, "features")
	if err := os.MkdirAll(filepath.Join(feats, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	feature := "Feature: planted\n  A description naming DESCRIPTION_ONLY is not read.\n  Scenario: s\n" +
		"    Then the run is \"PLANTED_STATUS\"\n    And the stdout of \"x\" has a line starting with \"PLANTED: \"\n" +
		"    And the node states are:\n      | node | status |\n      | n1   | PLANTED_CELL |\n"
	if err := os.WriteFile(filepath.Join(feats, "x", "p.feature"), []byte(feature), 0o644); err != nil {
		t.Fatal(err)
	}
	inSteps, err := stepLiterals(dir)
	if err != nil {
		t.Fatal(err)
	}
	inFeatures, err := featureLiterals(feats)
	if err != nil {
		t.Fatal(err)
	}
	doc := "# list\n\n- `PLANTEDWORD`: named, so not missing.\n- PLANTED_STATUS outside a code span does not count; `PLANTED_CELLS` is another literal.\n"
	missing := strings.Join(missingLiterals(doc, inSteps, inFeatures), "\n")
	for _, want := range []string{
		`"PLANTED_RESULT_CODE" (found at steps/planted.go:3)`,
		`"PLANTED_STATUS" (found at features/x/p.feature:4)`,
		`"PLANTED: " (found at features/x/p.feature:5)`,
		`"PLANTED_CELL" (found at features/x/p.feature:8)`,
	} {
		if !strings.Contains(missing, want) {
			t.Errorf("the check does not report %s; it reported:\n%s", want, missing)
		}
	}
	for _, never := range []string{"PLANTEDWORD", "IN_A_TEST_FILE", "DESCRIPTION_ONLY"} {
		if strings.Contains(missing, `"`+never+`"`) {
			t.Errorf("the check reports %s, which the rule does not make a literal to list:\n%s", never, missing)
		}
	}
}
