// Package stepindex relates step definitions to the feature steps that use them: which
// scenarios use each definition, which definitions no scenario uses, and which feature steps
// match no definition or more than one. It matches as godog does (the definition's regular
// expression against the step text without its keyword; a step's doc string or table does not
// take part), so what it reports is what a strict godog run would find.
package stepindex

import (
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
)

// Step is one step of a feature scenario.
type Step struct {
	Scenario string // the scenario's manifest id (its @<id> tag)
	Keyword  string // "Given", "And", …
	Text     string // the text godog matches: without the keyword
	File     string // feature file
	Line     int    // line of the scenario
}

// String is the step as written, e.g. `Given the run is "FAILED"`.
func (s Step) String() string { return strings.TrimSpace(s.Keyword + " " + s.Text) }

// ScenarioSteps makes the Steps of one scenario from its step lines as runner.Feature keeps
// them ("Given …": keyword, one space, text).
func ScenarioSteps(id, file string, line int, stepLines []string) []Step {
	out := make([]Step, 0, len(stepLines))
	for _, l := range stepLines {
		kw, text, _ := strings.Cut(strings.TrimSpace(l), " ")
		out = append(out, Step{Scenario: id, Keyword: kw, Text: text, File: file, Line: line})
	}
	return out
}

// Matches returns the indexes in defs of the definitions whose expression matches text.
func Matches(defs []stepdef.Def, text string) []int {
	var out []int
	for i, d := range defs {
		if d.Re != nil && d.Re.MatchString(text) {
			out = append(out, i)
		}
	}
	return out
}

// Entry is one definition with the scenarios whose steps it matches, in the order the steps
// were given (run order, when they come from the manifest's items).
type Entry struct {
	Def       stepdef.Def
	Scenarios []string
	Uses      int // matching steps, counting repeats
}

// Ambiguity is a step that matches several definitions (godog refuses it in strict mode).
type Ambiguity struct {
	Step Step
	Defs []stepdef.Def
}

// Build relates every definition to the steps it matches.
func Build(defs []stepdef.Def, steps []Step) []Entry {
	entries := make([]Entry, len(defs))
	seen := make([]map[string]bool, len(defs))
	for i, d := range defs {
		entries[i].Def = d
		seen[i] = map[string]bool{}
	}
	for _, s := range steps {
		for _, i := range Matches(defs, s.Text) {
			entries[i].Uses++
			if !seen[i][s.Scenario] {
				seen[i][s.Scenario] = true
				entries[i].Scenarios = append(entries[i].Scenarios, s.Scenario)
			}
		}
	}
	return entries
}

// Check returns the definitions no step uses, the steps no definition matches, and the steps
// more than one definition matches. A step matched ambiguously still counts as a use of each
// definition it matches: the ambiguity is reported once, as the step's problem.
func Check(defs []stepdef.Def, steps []Step) (unused []stepdef.Def, undefined []Step, ambiguous []Ambiguity) {
	for _, e := range Build(defs, steps) {
		if e.Uses == 0 {
			unused = append(unused, e.Def)
		}
	}
	for _, s := range steps {
		m := Matches(defs, s.Text)
		switch len(m) {
		case 0:
			undefined = append(undefined, s)
		case 1:
		default:
			a := Ambiguity{Step: s}
			for _, i := range m {
				a.Defs = append(a.Defs, defs[i])
			}
			ambiguous = append(ambiguous, a)
		}
	}
	return unused, undefined, ambiguous
}

// RelFile shows where d's handler is relative to the module root ("internal/steps/kit/runs.go"), whatever
// the working directory and whether the build trimmed paths: the handler's package path below
// the module path is its directory. Handlers outside this module keep their full file path.
func RelFile(d stepdef.Def) string {
	if d.File == "" {
		return "?"
	}
	base := filepath.Base(filepath.FromSlash(d.File))
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path != "" {
		pkg := packagePath(d.Handler)
		if pkg == bi.Main.Path {
			return base
		}
		if dir, ok := strings.CutPrefix(pkg, bi.Main.Path+"/"); ok {
			return dir + "/" + base
		}
	}
	return filepath.ToSlash(d.File)
}

// packagePath is the import path in a function name: "github.com/x/m/steps.(*T).f" ->
// "github.com/x/m/steps".
func packagePath(name string) string {
	slash := 0
	head := name
	if i := strings.IndexAny(head, "(["); i >= 0 {
		head = head[:i]
	}
	if i := strings.LastIndex(head, "/"); i >= 0 {
		slash = i + 1
	}
	if i := strings.Index(name[slash:], "."); i >= 0 {
		return name[:slash+i]
	}
	return name
}

// ShortName drops the package path of a handler's name ("github.com/x/flowtest/steps.f" ->
// "steps.f"), keeping the package name.
func ShortName(name string) string {
	head := name
	if i := strings.IndexAny(head, "(["); i >= 0 {
		head = head[:i] // a slash inside a receiver or type argument is not the package path's
	}
	if i := strings.LastIndex(head, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}
