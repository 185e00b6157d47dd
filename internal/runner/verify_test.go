package runner

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/results"
)

// Verify runs after the steps with the scenario's manifest entry: what it asserts lands in the
// record, its error fails a scenario that passed (with the error as the reason), a panic too,
// and a scenario that already failed keeps its own reason.
func TestVerifyFailsAPassedScenario(t *testing.T) {
	fsys := selfFeatures(map[string]string{"manifest.yaml": `schema_version: 1
scenarios:
  - {id: alpha, series: s1, acceptance: ["1"], invariant_exemptions: {one-run-per-key: "the scenario plants a second run"}}
  - {id: beta, series: s1}
  - {id: delta, series: s2, acceptance: ["7"]}
  - {id: win-only, series: s2, needs: [windows]}
`})
	seen := map[string]map[string]string{}
	r := execute(t, fsys, plan(t, fsys, "@alpha or @beta or @delta"), Options{
		Verify: func(ctx context.Context, st *scenario.State, e Entry) error {
			seen[st.ID] = e.InvariantExemptions
			if st.ID == "delta" {
				panic("checker broke")
			}
			return st.On("traffic.invariants").Assert("invariant puts-fenced", "no violation", "write 3 carries no revision", false)
		},
	})
	assert.Equal(t, map[string]string{"one-run-per-key": "the scenario plants a second run"}, seen["alpha"])
	assert.Equal(t, ExitFailed, r.res.Code)
	for _, s := range r.res.Scenarios {
		switch s.ID {
		case "alpha":
			assert.Equal(t, results.StatusFailed, s.Status)
			assert.Equal(t, "invariant puts-fenced: expected no violation, saw write 3 carries no revision", s.Reason)
			require.NotEmpty(t, s.Assertions)
			assert.Equal(t, "invariant puts-fenced", s.Assertions[len(s.Assertions)-1].What)
		case "beta":
			assert.Equal(t, results.StatusFailed, s.Status)
			assert.Contains(t, s.Reason, "deliberate failure", "the step's failure stays the reason")
		case "delta":
			assert.Equal(t, results.StatusFailed, s.Status)
			assert.Contains(t, s.Reason, "checker broke")
		}
	}
}

// A Verify that finds nothing leaves a passed scenario passed.
func TestVerifyThatHoldsKeepsThePass(t *testing.T) {
	fsys := selfFeatures(nil)
	r := execute(t, fsys, plan(t, fsys, "@alpha"), Options{
		Verify: func(ctx context.Context, st *scenario.State, e Entry) error {
			_, hasDeadline := ctx.Deadline()
			if !hasDeadline {
				return errors.New("no deadline")
			}
			return st.On("traffic.invariants").Assert("invariant puts-fenced", "no violation", "none", true)
		},
	})
	assert.Equal(t, ExitPassed, r.res.Code)
}

// invariant_exemptions names known invariants, each with a reason; anything else is refused
// with the file and the line of the offending entry.
func TestManifestInvariantExemptions(t *testing.T) {
	m, err := ParseManifest("features/manifest.yaml", []byte("schema_version: 1\nscenarios:\n  - id: a\n    series: s\n    invariant_exemptions:\n      puts-fenced: the scenario plants an unfenced claim\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"puts-fenced": "the scenario plants an unfenced claim"}, m.Scenarios[0].InvariantExemptions)
	for name, c := range map[string]struct{ text, want string }{
		"unknown invariant": {"  - id: a\n    series: s\n    invariant_exemptions:\n      puts-fenced: why\n      puts-fencd: why\n",
			`features/manifest.yaml:7: invariant_exemptions: unknown invariant "puts-fencd" (the invariants: one-run-per-key, lock-intervals-disjoint, one-claim-per-request, puts-fenced, no-attempt-after-close, cancelled-executed-nothing, stale-never-reexecuted)`},
		"empty reason":  {"  - id: a\n    series: s\n    invariant_exemptions:\n      puts-fenced: \"  \"\n", "features/manifest.yaml:6: invariant_exemptions: puts-fenced needs a reason"},
		"no reason":     {"  - {id: a, series: s, invariant_exemptions: {puts-fenced: }}\n", "features/manifest.yaml:3: invariant_exemptions: puts-fenced needs a reason"},
		"not a reason":  {"  - {id: a, series: s, invariant_exemptions: {puts-fenced: [a, b]}}\n", "features/manifest.yaml:3: invariant_exemptions: puts-fenced needs a reason"},
		"not a mapping": {"  - {id: a, series: s, invariant_exemptions: [puts-fenced]}\n", "features/manifest.yaml:3: invariant_exemptions must be a mapping"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseManifest("features/manifest.yaml", []byte("schema_version: 1\nscenarios:\n"+c.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
