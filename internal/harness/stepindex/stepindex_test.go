package stepindex

import (
	"context"
	"testing"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
)

// fakeLibrary registers a small step library through a recording registry, as
// `flowtest steps` registers the real one.
func fakeLibrary(t *testing.T) []stepdef.Def {
	t.Helper()
	idx := &stepdef.Index{}
	reg := stepdef.Registry{Index: idx}
	reg.Step(`^the network fixture "([^"]+)"$`, func(ctx context.Context, name string) error { return nil })
	reg.Step(`^the run is "([^"]+)"$`, func(ctx context.Context, status string) error { return nil })
	reg.Step(`^the node states are:$`, func(ctx context.Context, table *godog.Table) error { return nil })
	reg.Step(`^the last invocation is "([^"]+)"$`, func(ctx context.Context, s string) error { return nil })
	reg.Step(`^the last invocation is "([^"]+)" with result code "([^"]+)"$`, func(ctx context.Context, s, c string) error { return nil })
	reg.Step(`^nobody uses this$`, func() error { return nil })
	// Unanchored, as godog allows: it matches inside longer texts too.
	reg.Step(`FlowNet runs`, func() error { return nil })
	reg.Step(`^FlowNet runs the network$`, func() error { return nil })
	return idx.Defs()
}

func TestCheckFindsUnusedUndefinedAndAmbiguous(t *testing.T) {
	defs := fakeLibrary(t)
	require.Len(t, defs, 8)
	var steps []Step
	steps = append(steps, ScenarioSteps("m5-a", "m5/a.feature", 3, []string{
		`Given the network fixture "network-success.yaml"`,
		`When FlowNet runs the network`, // both FlowNet definitions: ambiguous
		`Then the run is "SUCCEEDED"`,
		`And the node states are:`, // a table step matches by its text
		`And the last invocation is "SUCCEEDED" with result code "OK"`,
	})...)
	steps = append(steps, ScenarioSteps("m5-b", "m5/b.feature", 7, []string{
		`Given the network fixture "network-midfail.yaml"`,
		`Then the run is "FAILED"`,
		`But the run is "FAILED"`,
		`Then the run becomes "FAILED"`, // no definition
	})...)

	unused, undefined, ambiguous := Check(defs, steps)

	require.Len(t, unused, 2)
	assert.Equal(t, `^the last invocation is "([^"]+)"$`, unused[0].Expr, "quotes keep the short form from matching the long text")
	assert.Equal(t, `^nobody uses this$`, unused[1].Expr)

	require.Len(t, undefined, 1)
	assert.Equal(t, Step{Scenario: "m5-b", Keyword: "Then", Text: `the run becomes "FAILED"`, File: "m5/b.feature", Line: 7}, undefined[0])
	assert.Equal(t, `Then the run becomes "FAILED"`, undefined[0].String())

	require.Len(t, ambiguous, 1)
	assert.Equal(t, "FlowNet runs the network", ambiguous[0].Step.Text)
	require.Len(t, ambiguous[0].Defs, 2)
	assert.Equal(t, "FlowNet runs", ambiguous[0].Defs[0].Expr)
	assert.Equal(t, "^FlowNet runs the network$", ambiguous[0].Defs[1].Expr)

	entries := Build(defs, steps)
	require.Len(t, entries, len(defs))
	assert.Equal(t, []string{"m5-a", "m5-b"}, entries[0].Scenarios, "scenarios in step order, once each")
	assert.Equal(t, []string{"m5-a", "m5-b"}, entries[1].Scenarios)
	assert.Equal(t, 3, entries[1].Uses, "repeats count as uses")
	assert.Equal(t, []string{"m5-a"}, entries[2].Scenarios)
	assert.Empty(t, entries[5].Scenarios)

	// Positions come from the registry's index: this file, the line of each registration.
	assert.Equal(t, "internal/harness/stepindex/stepindex_test.go", RelFile(defs[0]))
	assert.NotZero(t, defs[0].Line)
	assert.Equal(t, "stepindex.fakeLibrary.func1", ShortName(defs[0].Handler))
}

func TestCheckOfAConsistentLibraryIsEmpty(t *testing.T) {
	defs := fakeLibrary(t)[:1]
	unused, undefined, ambiguous := Check(defs, ScenarioSteps("x", "x.feature", 1, []string{`Given the network fixture "n.yaml"`}))
	assert.Empty(t, unused)
	assert.Empty(t, undefined)
	assert.Empty(t, ambiguous)
}

func TestRelFile(t *testing.T) {
	assert.Equal(t, "internal/steps/kit/runs.go", RelFile(stepdef.Def{Handler: "github.com/ksqlflow/flowtest/internal/steps/kit.runDomain.runs", File: "/src/flowtest/internal/steps/kit/runs.go"}))
	assert.Equal(t, "internal/steps/kit/runs.go", RelFile(stepdef.Def{Handler: "github.com/ksqlflow/flowtest/internal/steps/kit.(*world).f-fm", File: "github.com/ksqlflow/flowtest/internal/steps/kit/runs.go"}), "trimmed paths")
	assert.Equal(t, "/elsewhere/x.go", RelFile(stepdef.Def{Handler: "example.com/other.F", File: "/elsewhere/x.go"}))
	assert.Equal(t, "?", RelFile(stepdef.Def{Handler: "example.com/other.F"}))
	assert.Equal(t, "github.com/ksqlflow/flowtest/internal/steps", packagePath("github.com/ksqlflow/flowtest/internal/steps.(*world).f"))
	assert.Equal(t, "main", packagePath("main.main.func1"))
}

func TestShortName(t *testing.T) {
	assert.Equal(t, "steps.addRunSteps.func1", ShortName("github.com/ksqlflow/flowtest/steps.addRunSteps.func1"))
	assert.Equal(t, "steps.(*world).openNetwork", ShortName("github.com/ksqlflow/flowtest/steps.(*world).openNetwork"))
	assert.Equal(t, "main.f", ShortName("main.f"))
	assert.Equal(t, "p.F[...]", ShortName("example.com/p.F[...]"))
}
