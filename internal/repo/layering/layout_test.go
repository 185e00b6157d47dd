package layering

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// mapRow is one row of docs/layout.md's package map.
type mapRow struct {
	lines int
	why   string
}

// packageMap reads the rows between the map's markers in docs/layout.md, by package.
func packageMap(t *testing.T) map[string]mapRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- package map:", "<!-- /package map -->"
	_, rest, ok := strings.Cut(string(data), begin)
	if !ok {
		t.Fatalf("docs/layout.md has no %q marker", begin)
	}
	table, _, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("docs/layout.md has no %q marker", end)
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\| (\\d+) \\| (.+) \\|$")
	rows := map[string]mapRow{}
	for _, line := range strings.Split(table, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		if _, twice := rows[m[1]]; twice {
			t.Errorf("docs/layout.md's package map lists %s twice", m[1])
		}
		rows[m[1]] = mapRow{lines: n, why: m[3]}
	}
	return rows
}

// goLines counts the lines of the non-test Go files in dir.
func goLines(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(data), "\n")
	}
	return n
}

// docs/layout.md's package map lists every package of the module, says why it exists, and
// its size is roughly true: a package missing from the map, a row of no package, or a size
// that moved by more than a fifth and 50 lines fails.
func TestLayoutMapListsEveryPackage(t *testing.T) {
	rows := packageMap(t)
	pkgs := listPackages(t)
	if len(pkgs) < len(parsedRules(t).Packages())/2 {
		t.Fatalf("go list found %d packages: not run from the module?", len(pkgs))
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		name, _ := rel(p.ImportPath)
		seen[name] = true
		r, ok := rows[name]
		if !ok {
			t.Errorf("%s is not in docs/layout.md's package map: add its row (lines, why it exists)", name)
			continue
		}
		if strings.TrimSpace(r.why) == "" {
			t.Errorf("docs/layout.md's package map says nothing of why %s exists", name)
		}
		lines := goLines(t, filepath.Join("..", "..", "..", filepath.FromSlash(name)))
		if d := lines - r.lines; (d > 50 || d < -50) && (d*5 > lines || -d*5 > lines) {
			t.Errorf("%s has %d lines of non-test Go, docs/layout.md's package map says %d: redraw its row", name, lines, r.lines)
		}
	}
	for name := range rows {
		if !seen[name] {
			t.Errorf("docs/layout.md's package map lists %s, which is not a package of the module", name)
		}
	}
}
