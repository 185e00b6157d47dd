package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ksqlflow/flowtest/internal/results"
)

// --fail-fast: after the first failed scenario no other starts; the rest are recorded not run
// with the reason naming it (never passed), and the run exits 1.
func TestFailFastStartsNothingAfterTheFirstFailure(t *testing.T) {
	fsys := selfFeatures(nil)
	items := plan(t, fsys, "")
	r := execute(t, fsys, items, Options{FailFast: true})
	assert.Equal(t, []string{"alpha", "beta"}, startedOrder(r.progress.String()), "delta is not started")
	byID := map[string]*results.Scenario{}
	for _, s := range r.res.Scenarios {
		byID[s.ID] = s
	}
	assert.Equal(t, results.StatusPassed, byID["alpha"].Status)
	assert.Equal(t, results.StatusFailed, byID["beta"].Status)
	assert.Equal(t, results.StatusNotRun, byID["delta"].Status)
	assert.Equal(t, "--fail-fast: stopped after beta failed", byID["delta"].Reason)
	assert.Equal(t, ReasonNotImplemented, byID["gamma"].Reason, "what would not have run keeps its own reason")
	assert.Equal(t, ExitFailed, r.res.Code)
	assert.False(t, r.res.Interrupted, "stopped by the flag, not by a signal")

	without := execute(t, fsys, plan(t, fsys, ""), Options{})
	assert.Equal(t, []string{"alpha", "beta", "delta"}, startedOrder(without.progress.String()), "without the flag the run goes on")
}
