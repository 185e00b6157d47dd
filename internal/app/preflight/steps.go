package preflight

import (
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/stepindex"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// StepsDefinedCheckName is the name of the checks StepsDefined returns.
const StepsDefinedCheckName = "steps-defined"

// StepsDefined is the preflight rule that every step of the selected scenarios matches
// exactly one step definition (what `flowtest steps` lists): an undefined or ambiguous step
// would otherwise be found only when reached, after FlowNet ran (on live: after it wrote to
// the tenant). defs is the step library (the caller builds it: this package may not import
// the steps); libErr is why it could not be built. One failed check per offending step,
// naming its feature file and line and its text; one passing check otherwise.
func StepsDefined(defs []stepdef.Def, libErr error, items []runner.Item) []safety.Check {
	if libErr != nil {
		return []safety.Check{{Name: StepsDefinedCheckName, Subject: "step library", Reason: libErr.Error()}}
	}
	var all []stepindex.Step
	scenarios := 0
	for _, it := range items {
		if !it.Run || it.Feature == nil {
			continue
		}
		scenarios++
		f := it.Feature
		steps := stepindex.ScenarioSteps(it.ID, f.Path, int(f.Line), f.StepText)
		for i := range steps {
			if i < len(f.StepLines) && f.StepLines[i] > 0 {
				steps[i].Line = int(f.StepLines[i])
			}
		}
		all = append(all, steps...)
	}
	_, undefined, ambiguous := stepindex.Check(defs, all)
	var out []safety.Check
	for _, s := range undefined {
		out = append(out, safety.Check{Name: StepsDefinedCheckName, Subject: fmt.Sprintf("%s:%d", s.File, s.Line),
			Reason: fmt.Sprintf("scenario %s: step %q matches no step definition", s.Scenario, s.String())})
	}
	for _, a := range ambiguous {
		exprs := make([]string, 0, len(a.Defs))
		for _, d := range a.Defs {
			exprs = append(exprs, d.Expr)
		}
		out = append(out, safety.Check{Name: StepsDefinedCheckName, Subject: fmt.Sprintf("%s:%d", a.Step.File, a.Step.Line),
			Reason: fmt.Sprintf("scenario %s: step %q matches %d step definitions: %s", a.Step.Scenario, a.Step.String(), len(a.Defs), strings.Join(exprs, " | "))})
	}
	if len(out) > 0 {
		return out
	}
	return []safety.Check{{Name: StepsDefinedCheckName, Subject: "features", OK: true,
		Reason: fmt.Sprintf("%d steps of %d scenarios each match one step definition", len(all), scenarios)}}
}
