package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/results"
)

// A step that reports an unmet precondition makes the scenario blocked: its own status in the
// record, run.json, README, junit and cucumber, never failed or passed, and not green.
func TestBlockedStepMakesTheScenarioBlocked(t *testing.T) {
	fsys := selfFeatures(map[string]string{"m/beta.feature": `Feature: second
  @beta @s1
  Scenario: beta is blocked
    Given a step that passes
    When the request app has a pending request
    Then a step that passes
`})
	r := execute(t, fsys, plan(t, fsys, "@beta or @alpha"), Options{
		Initialize: func(sc *godog.ScenarioContext, reg stepdef.Registry) {
			trivialSteps(sc, reg)
			reg.Step(`^the request app has a pending request$`, func(ctx context.Context) error {
				return scenario.Blocked("a pending REQUESTED request is in the request app")
			})
		},
	})
	st := statuses(r.res)
	assert.Equal(t, results.StatusPassed, st["alpha"])
	assert.Equal(t, results.StatusBlocked, st["beta"])
	assert.Equal(t, ExitFailed, r.res.Code, "blocked is not green")
	for _, s := range r.res.Scenarios {
		if s.ID == "beta" {
			assert.Equal(t, "blocked: a pending REQUESTED request is in the request app", s.Reason)
		}
	}
	var run results.Run
	data, err := os.ReadFile(filepath.Join(r.archive.Dir(), "run.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &run))
	assert.Equal(t, 1, run.Totals.Blocked)
	assert.Equal(t, 0, run.Totals.Failed)
	require.NotNil(t, run.ExitCode)
	assert.Equal(t, ExitFailed, *run.ExitCode)
	readme, err := os.ReadFile(filepath.Join(r.archive.Dir(), "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "| beta | — | **blocked** |")
	assert.Contains(t, string(readme), "1 blocked")
	junit, err := os.ReadFile(filepath.Join(r.archive.Dir(), "junit.xml"))
	require.NoError(t, err)
	assert.Contains(t, string(junit), `<error message="blocked: a pending REQUESTED request is in the request app" type="blocked">`)
	cuke, err := os.ReadFile(filepath.Join(r.archive.Dir(), "cucumber.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(cuke), `"status":"failed"`, "a blocked scenario is not a failed one in cucumber.json")
	assert.Contains(t, string(cuke), `flowtest status: blocked`)
}

// The hook before cleanup sees the scenario's state (to read what cleanup deletes), steps
// and their start times land in the record, and a panic in the hook is only a note.
func TestBeforeCleanupAndStepTimes(t *testing.T) {
	fsys := selfFeatures(nil)
	before := time.Now().UTC()
	calls := 0
	r := execute(t, fsys, plan(t, fsys, "@alpha or @delta"), Options{
		BeforeCleanup: func(ctx context.Context, st *scenario.State) {
			calls++
			if st.ID == "delta" {
				panic("reader broke")
			}
			_, hasDeadline := ctx.Deadline()
			require.True(t, hasDeadline)
			st.SetAttempts([]results.Attempt{{Node: "n1", AttemptNo: 1, Status: "SUCCESS"}})
		},
	})
	assert.Equal(t, 2, calls)
	assert.Equal(t, ExitPassed, r.res.Code, "a hook panic does not fail the scenario")
	for _, s := range r.res.Scenarios {
		switch s.ID {
		case "alpha":
			require.Len(t, s.Attempts, 1)
			assert.Equal(t, "n1", s.Attempts[0].Node)
			require.NotEmpty(t, s.Steps)
			for _, st := range s.Steps {
				assert.False(t, st.Start.Before(before), "step %q start %v", st.Text, st.Start)
			}
		case "delta":
			require.NotEmpty(t, s.Notes)
			assert.True(t, strings.Contains(s.Notes[0].Detail, "reader broke"))
		}
	}
}

// A precondition reported by the hook that prepares the scenario blocks it too.
func TestBlockedBeforeScenario(t *testing.T) {
	fsys := selfFeatures(nil)
	r := execute(t, fsys, plan(t, fsys, "@alpha"), Options{
		BeforeScenario: func(ctx context.Context, st *scenario.State) error {
			return scenario.Blocked("the request app holds a pending request")
		},
	})
	for _, s := range r.res.Scenarios {
		if s.ID == "alpha" {
			assert.Equal(t, results.StatusBlocked, s.Status, s.Reason)
			assert.Equal(t, "blocked: the request app holds a pending request", s.Reason)
		}
	}
	assert.Equal(t, ExitFailed, r.res.Code)
}
