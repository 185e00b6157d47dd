package steps_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/stepindex"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/steps"
	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// The step library and the feature files agree: every definition is used by some scenario,
// and every feature step matches exactly one definition (what a strict godog run requires,
// found here without starting anything). `flowtest steps` prints the same index.
func TestStepLibraryMatchesTheFeatures(t *testing.T) {
	idx := &stepdef.Index{}
	(&steps.Suite{}).Initialize(nil, stepdef.Registry{Index: idx}) // records only: no godog suite
	defs := idx.Defs()
	require.NotEmpty(t, defs, "the step library registered nothing")

	fsys := os.DirFS("../../features")
	m, err := runner.LoadManifest(fsys, "manifest.yaml")
	require.NoError(t, err)
	feats, err := runner.Discover(fsys, ".", m)
	require.NoError(t, err)
	require.NotEmpty(t, feats, "no feature files found")
	var featureSteps []stepindex.Step
	for _, e := range m.Scenarios { // manifest order, so messages follow the run order
		if f, ok := feats[e.ID]; ok {
			featureSteps = append(featureSteps, stepindex.ScenarioSteps(e.ID, f.Path, int(f.Line), f.StepText)...)
		}
	}

	unused, undefined, ambiguous := stepindex.Check(defs, featureSteps)
	for _, d := range unused {
		t.Errorf("step definition used by no feature: %s (%s:%d %s)", d.Expr, stepindex.RelFile(d), d.Line, stepindex.ShortName(d.Handler))
	}
	for _, s := range undefined {
		t.Errorf("feature step matches no definition: %s:%d (%s): %s", s.File, s.Line, s.Scenario, s)
	}
	for _, a := range ambiguous {
		var exprs []string
		for _, d := range a.Defs {
			exprs = append(exprs, d.Expr)
		}
		t.Errorf("feature step matches %d definitions: %s:%d (%s): %s: %q", len(a.Defs), a.Step.File, a.Step.Line, a.Step.Scenario, a.Step, exprs)
	}
}

// The fixture expressions the kit shares with the groups above it are registered by them
// (the kit's own are checked in kit/fixturefiles_test.go).
func TestSharedFixtureExpressionsAreRegistered(t *testing.T) {
	idx := &stepdef.Index{}
	(&steps.Suite{}).Initialize(nil, stepdef.Registry{Index: idx})
	registered := map[string]bool{}
	for _, d := range idx.Defs() {
		registered[d.Expr] = true
	}
	for _, e := range kit.FixtureExprsAbove {
		require.True(t, registered[e], "kit.FixtureExprsAbove lists an expression no step registers: %s", e)
	}
}
