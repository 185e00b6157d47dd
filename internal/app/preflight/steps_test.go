package preflight

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/runner"
)

func stepLib() []stepdef.Def {
	idx := &stepdef.Index{}
	idx.Add(`^the network fixture "([^"]+)"$`, func(string) error { return nil })
	idx.Add(`^FlowNet runs$`, func() error { return nil })
	idx.Add(`^FlowNet runs.*$`, func() error { return nil })
	idx.Add(`^it passes$`, func() error { return nil })
	return idx.Defs()
}

func stepItem(id string, run bool, lines []int64, steps ...string) runner.Item {
	return runner.Item{Entry: runner.Entry{ID: id}, Run: run,
		Feature: &runner.Feature{ID: id, Path: "x/" + id + ".feature", Line: 3, StepText: steps, StepLines: lines}}
}

func TestStepsDefinedNamesEachUndefinedAndAmbiguousStep(t *testing.T) {
	items := []runner.Item{
		stepItem("a", true, []int64{4, 5, 6}, `Given the network fixture "n.yaml"`, "When FlowNet runs", "Then it passs"),
		stepItem("b", false, []int64{4}, "Given nothing defines me"), // not selected: not checked
		stepItem("c", true, nil, "Given nothing defines me either"),  // no step lines: the scenario's
	}
	checks := StepsDefined(stepLib(), nil, items)
	require.Len(t, checks, 3)
	for _, c := range checks {
		assert.Equal(t, "steps-defined", c.Name)
		assert.False(t, c.OK)
	}
	assert.Equal(t, "x/a.feature:6", checks[0].Subject)
	assert.Contains(t, checks[0].Reason, `scenario a: step "Then it passs" matches no step definition`)
	assert.Equal(t, "x/c.feature:3", checks[1].Subject)
	assert.Contains(t, checks[1].Reason, `"Given nothing defines me either"`)
	assert.Equal(t, "x/a.feature:5", checks[2].Subject)
	assert.Contains(t, checks[2].Reason, `scenario a: step "When FlowNet runs" matches 2 step definitions: ^FlowNet runs$ | ^FlowNet runs.*$`)
}

func TestStepsDefinedPassesAWellDefinedSelection(t *testing.T) {
	checks := StepsDefined(stepLib(), nil, []runner.Item{stepItem("a", true, []int64{4, 5}, `Given the network fixture "n.yaml"`, "Then it passes")})
	require.Len(t, checks, 1)
	assert.True(t, checks[0].OK)
	assert.Contains(t, checks[0].Reason, "2 steps of 1 scenarios")

	checks = StepsDefined(nil, errors.New("building the step library panicked"), nil)
	require.Len(t, checks, 1)
	assert.False(t, checks[0].OK)
	assert.Contains(t, checks[0].Reason, "panicked")
}
