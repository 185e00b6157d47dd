package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/stepindex"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// stepsFlags are the flags of `flowtest steps`.
type stepsFlags struct {
	runFlags
	unused bool
}

func (f *stepsFlags) bind(fs *flag.FlagSet) {
	f.bindNamed(fs, "features")
	fs.BoolVar(&f.unused, "unused", false, "list only the definitions no scenario uses (exit 1 if there are any)")
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
	unused, undefined, ambiguous := stepindex.Check(defs, featureSteps)

	for _, e := range stepindex.Build(defs, featureSteps) {
		if f.unused && e.Uses > 0 {
			continue
		}
		fmt.Fprintf(stdout, "%s\n    -> %s\n", e.Def.Expr, where(e.Def))
		switch {
		case f.unused:
		case e.Uses == 0:
			fmt.Fprintln(stdout, "    used by no scenario")
		default:
			fmt.Fprintf(stdout, "    used by %s\n", strings.Join(e.Scenarios, " "))
		}
	}
	for _, s := range undefined {
		fmt.Fprintf(stdout, "UNDEFINED %s (%s:%d): %s\n", s.Scenario, s.File, s.Line, s)
	}
	for _, a := range ambiguous {
		fmt.Fprintf(stdout, "AMBIGUOUS %s (%s:%d): %s\n", a.Step.Scenario, a.Step.File, a.Step.Line, a.Step)
		for _, d := range a.Defs {
			fmt.Fprintf(stdout, "    matches %s -> %s\n", d.Expr, where(d))
		}
	}
	fmt.Fprintf(stdout, "%d step definitions, %d used by no scenario; %d scenarios, %d steps, %d undefined, %d ambiguous\n",
		len(defs), len(unused), scenarios, len(featureSteps), len(undefined), len(ambiguous))
	if len(undefined) > 0 || len(ambiguous) > 0 || (f.unused && len(unused) > 0) {
		return runner.ExitFailed
	}
	return 0
}

func where(d stepdef.Def) string {
	if d.File == "" {
		return stepindex.ShortName(d.Handler)
	}
	return fmt.Sprintf("%s:%d %s", stepindex.RelFile(d), d.Line, stepindex.ShortName(d.Handler))
}
