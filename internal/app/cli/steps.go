package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/stepindex"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// stepsFlags are the flags of `flowtest steps`.
type stepsFlags struct {
	runFlags
	jsonFlag
	unused bool
}

func (f *stepsFlags) bind(fs *flag.FlagSet) {
	f.bindNamed(fs, "features")
	fs.BoolVar(&f.unused, "unused", false, "list only the definitions no scenario uses (exit 1 if there are any)")
	f.bindJSON(fs, "the definitions, undefined and ambiguous steps")
}

// cmdSteps is `flowtest steps [--features DIR] [--unused]`: every step definition with its
// expression, handler and file:line, and the scenarios whose steps it matches (what `godog -d`
// shows, plus the use). Undefined and ambiguous feature steps are listed after it. Exit 1
// when a feature step matches no definition or several (with --unused, also when a definition
// is used by no scenario), 2 on usage or feature errors.
func cmdSteps(inv invocation, f *stepsFlags, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	if unexpectedArgs(inv, args, "") {
		return runner.ExitRefused
	}
	// The same discovery as run and list, so the index covers exactly what they would run.
	c := f.common
	c.target = "sandbox"
	items, _, _, err := c.plan()
	if err != nil {
		return exitFor(stderr, "steps", err)
	}
	defs, err := stepLibrary()
	if err != nil {
		fmt.Fprintf(stderr, "flowtest steps: %v\n", err)
		return runner.ExitFailed
	}
	var featureSteps []stepindex.Step
	scenarios := 0
	for _, it := range items {
		if it.Feature == nil {
			continue
		}
		scenarios++
		f := it.Feature
		featureSteps = append(featureSteps, stepindex.ScenarioSteps(it.ID, f.Path, int(f.Line), f.StepText)...)
	}
	rep := stepsReport(defs, featureSteps, scenarios, f.unused)
	if f.json {
		if err := writeJSON(stdout, rep, nil); err != nil {
			return exitFor(stderr, "steps", err)
		}
	} else {
		writeSteps(stdout, rep, f.unused)
	}
	t := rep.Totals
	if t.Undefined > 0 || t.Ambiguous > 0 || (f.unused && t.Unused > 0) {
		return runner.ExitFailed
	}
	return 0
}

// stepsReport relates the definitions to the feature steps: with unusedOnly, only the
// definitions no scenario uses are listed.
func stepsReport(defs []stepdef.Def, featureSteps []stepindex.Step, scenarios int, unusedOnly bool) stepsJSON {
	unused, undefined, ambiguous := stepindex.Check(defs, featureSteps)
	rep := stepsJSON{Definitions: []stepDefJSON{}, Undefined: []featureStepJSON{}, Ambiguous: []ambiguousJSON{},
		Totals: stepsTotalsJSON{Definitions: len(defs), Unused: len(unused), Scenarios: scenarios, Steps: len(featureSteps),
			Undefined: len(undefined), Ambiguous: len(ambiguous)}}
	for _, e := range stepindex.Build(defs, featureSteps) {
		if !unusedOnly || e.Uses == 0 {
			rep.Definitions = append(rep.Definitions, stepDefOf(e))
		}
	}
	for _, s := range undefined {
		rep.Undefined = append(rep.Undefined, featureStepOf(s))
	}
	for _, a := range ambiguous {
		am := ambiguousJSON{featureStepJSON: featureStepOf(a.Step)}
		for _, d := range a.Defs {
			am.Matches = append(am.Matches, stepDefOf(stepindex.Entry{Def: d}))
		}
		rep.Ambiguous = append(rep.Ambiguous, am)
	}
	return rep
}

// writeSteps is the text of the report: each definition with where it is and who uses it,
// the undefined and ambiguous feature steps, the counts.
func writeSteps(w io.Writer, rep stepsJSON, unusedOnly bool) {
	for _, d := range rep.Definitions {
		fmt.Fprintf(w, "%s\n    -> %s\n", d.Regexp, d.where())
		switch {
		case unusedOnly:
		case d.Uses == 0:
			fmt.Fprintln(w, "    used by no scenario")
		default:
			fmt.Fprintf(w, "    used by %s\n", strings.Join(d.Scenarios, " "))
		}
	}
	for _, s := range rep.Undefined {
		fmt.Fprintf(w, "UNDEFINED %s (%s:%d): %s\n", s.Scenario, s.File, s.Line, s.Step)
	}
	for _, a := range rep.Ambiguous {
		fmt.Fprintf(w, "AMBIGUOUS %s (%s:%d): %s\n", a.Scenario, a.File, a.Line, a.Step)
		for _, d := range a.Matches {
			fmt.Fprintf(w, "    matches %s -> %s\n", d.Regexp, d.where())
		}
	}
	t := rep.Totals
	fmt.Fprintf(w, "%d step definitions, %d used by no scenario; %d scenarios, %d steps, %d undefined, %d ambiguous\n",
		t.Definitions, t.Unused, t.Scenarios, t.Steps, t.Undefined, t.Ambiguous)
}

// where is "file:line handler", or the handler alone when the file is unknown.
func (d stepDefJSON) where() string {
	if d.File == "" {
		return d.Handler
	}
	return fmt.Sprintf("%s:%d %s", d.File, d.Line, d.Handler)
}
