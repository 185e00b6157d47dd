package layering

import (
	"fmt"
	"sort"
	"strings"
)

// Rules is a parsed dependency order: which packages each package may import, and which
// dependencies are forbidden outright.
//
// The text is a list of statements ended by ";". A statement is a chain of comma-separated
// groups joined by "<" or "!<":
//
//	a, b < c, d < e;   c and d may import a and b; e may import c and d (and so a and b)
//	x/* !< y, z;        y and z must not depend on any package below x, even indirectly
//
// "<" is an order: the packages on its right may import those on its left and, through
// them, everything those may import. Each package is placed by exactly one "<" (on its
// right), before it is used on a left side, so the order can hold no cycle. NONE is the
// empty group (packages that import nothing of ours); an upper-case name is a group of its
// own left side, for naming a level. "!<" forbids: no package on its right depends, directly
// or not, on one on its left; "dir/*" there names every package below dir.
type Rules struct {
	below     map[string][]string // a placed name → the names of the group it was placed above
	order     []string            // placed names in the order the text placed them
	forbidden []forbid
}

type forbid struct {
	of, in []string // "of !< in": packages matching in must not depend on those matching of
	text   string
}

// ParseRules reads the rules text; an error names the statement.
func ParseRules(text string) (*Rules, error) {
	r := &Rules{below: map[string][]string{}}
	for _, stmt := range statements(text) {
		if err := r.statement(stmt); err != nil {
			return nil, fmt.Errorf("rule %q: %w", oneLine(stmt), err)
		}
	}
	return r, nil
}

// statements cuts the text at ";" after dropping "#" comments.
func statements(text string) []string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	var out []string
	for _, s := range strings.Split(b.String(), ";") {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (r *Rules) statement(stmt string) error {
	const forbidMark = "\x00"
	s := strings.ReplaceAll(stmt, "!<", forbidMark)
	if strings.Contains(s, forbidMark) {
		parts := strings.Split(s, forbidMark)
		if len(parts) != 2 || strings.Contains(s, "<") {
			return fmt.Errorf("a forbidding rule is one \"x !< y\", not a chain")
		}
		of, err := group(parts[0], true)
		if err != nil {
			return err
		}
		in, err := group(parts[1], true)
		if err != nil {
			return err
		}
		r.forbidden = append(r.forbidden, forbid{of: of, in: in, text: oneLine(stmt)})
		return nil
	}
	parts := strings.Split(s, "<")
	if len(parts) < 2 {
		return fmt.Errorf("no \"<\": nothing is placed")
	}
	var prev []string
	for i, part := range parts {
		names, err := group(part, false)
		if err != nil {
			return err
		}
		if i > 0 {
			for _, n := range names {
				if n == "NONE" {
					return fmt.Errorf("NONE is the bottom, it cannot be placed above anything")
				}
				if _, twice := r.below[n]; twice {
					return fmt.Errorf("%s is placed twice: place it once, above all it may import", n)
				}
				r.below[n] = prev
				r.order = append(r.order, n)
			}
		}
		for _, n := range names {
			if _, placed := r.below[n]; !placed && n != "NONE" && i < len(parts)-1 {
				return fmt.Errorf("%s is used before it is placed", n)
			}
		}
		prev = names
	}
	return nil
}

// group reads "a, b, c"; wildcards only where forbidding.
func group(s string, wild bool) ([]string, error) {
	var names []string
	for _, f := range strings.Split(s, ",") {
		n := strings.TrimSpace(f)
		if n == "" {
			return nil, fmt.Errorf("an empty name in %q", oneLine(s))
		}
		if strings.ContainsAny(n, " \t\n") {
			return nil, fmt.Errorf("%q: names are separated by commas", oneLine(n))
		}
		if strings.Contains(n, "*") && (!wild || !strings.HasSuffix(n, "/*") || strings.Count(n, "*") > 1) {
			return nil, fmt.Errorf("%s: a wildcard may only end a name in a forbidding rule, where it says every package below; an order names its packages", n)
		}
		names = append(names, n)
	}
	return names, nil
}

func isGroup(n string) bool { return n == strings.ToUpper(n) }

// Placed reports whether the rules place pkg.
func (r *Rules) Placed(pkg string) bool {
	_, ok := r.below[pkg]
	return ok && !isGroup(pkg)
}

// Packages lists the placed packages (not groups), in the order the text placed them.
func (r *Rules) Packages() []string {
	var out []string
	for _, n := range r.order {
		if !isGroup(n) {
			out = append(out, n)
		}
	}
	return out
}

// MayImport is the set of packages pkg may import: everything placed below it, through
// groups and the packages below those.
func (r *Rules) MayImport(pkg string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		for _, b := range r.below[n] {
			if seen[b] {
				continue
			}
			seen[b] = true
			walk(b)
		}
	}
	walk(pkg)
	for n := range seen {
		if isGroup(n) {
			delete(seen, n)
		}
	}
	return seen
}

// Pkg is what the checker needs of a package: its path relative to the module, its
// package name, its direct imports and all it depends on (both relative, ours only).
type Pkg struct {
	Path    string
	Name    string
	Imports []string
	Deps    []string
}

// Violations judges pkgs by the rules: a package the rules do not place, an import the order
// does not allow, a dependency a forbidding rule names, a placed package that does not exist,
// and a package name used twice (main excepted: each command is its own).
func (r *Rules) Violations(pkgs []Pkg) []string {
	var bad []string
	exists := map[string]bool{}
	byName := map[string][]string{}
	for _, p := range pkgs {
		exists[p.Path] = true
		if p.Name != "main" {
			byName[p.Name] = append(byName[p.Name], p.Path)
		}
		if !r.Placed(p.Path) {
			bad = append(bad, fmt.Sprintf("%s: not placed by the rules (internal/repo/layering): place it above what it imports, and give its row in docs/layout.md", p.Path))
			continue
		}
		may := r.MayImport(p.Path)
		for _, imp := range p.Imports {
			if !may[imp] {
				bad = append(bad, fmt.Sprintf("%s imports %s, which is not below it in the rules", p.Path, imp))
			}
		}
		for _, f := range r.forbidden {
			if !matchesAny(f.in, p.Path) {
				continue
			}
			for _, d := range p.Deps {
				if matchesAny(f.of, d) {
					bad = append(bad, fmt.Sprintf("%s depends on %s, which %q forbids", p.Path, d, f.text))
				}
			}
		}
	}
	for _, n := range r.Packages() {
		if !exists[n] {
			bad = append(bad, fmt.Sprintf("the rules place %s, which is not a package of the module", n))
		}
	}
	for name, paths := range byName {
		if len(paths) > 1 {
			sort.Strings(paths)
			bad = append(bad, fmt.Sprintf("package name %s is used by %s: a name says which package it is, once", name, strings.Join(paths, ", ")))
		}
	}
	sort.Strings(bad)
	return bad
}

func matchesAny(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if dir, ok := strings.CutSuffix(p, "/*"); ok {
			if strings.HasPrefix(pkg, dir+"/") {
				return true
			}
		} else if p == pkg {
			return true
		}
	}
	return false
}
