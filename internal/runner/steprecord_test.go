package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
)

// Issue 43: every step of a record says where it is written (its feature file line), with
// which keyword, and which step definition ran it (the handler's file:line, as `flowtest
// steps` names it); cucumber.json carries all three. Before, cucumber.json had line 0 and no
// match.
func TestStepRecordsCarryLineKeywordAndMatch(t *testing.T) {
	fsys := selfFeatures(nil)
	r := execute(t, fsys, plan(t, fsys, "@beta"), Options{})
	var beta *results.Scenario
	for _, s := range r.res.Scenarios {
		if s.ID == "beta" {
			beta = s
		}
	}
	require.NotNil(t, beta)
	require.Len(t, beta.Steps, 3)
	// m/beta.feature: the steps are on lines 4, 5 and 6; the last was skipped after a failure.
	for i, want := range []struct {
		keyword string
		line    int
		status  string
	}{{"Given", 4, "passed"}, {"When", 5, "failed"}, {"Then", 6, "skipped"}} {
		st := beta.Steps[i]
		assert.Equal(t, want.keyword, st.Keyword, "step %d", i)
		assert.Equal(t, want.line, st.Line, "step %d", i)
		assert.Equal(t, want.status, st.Status, "step %d", i)
	}
	for _, st := range beta.Steps {
		// godog matches a skipped step too: it names the definition that would have run.
		require.NotNil(t, st.Match, "%s: the step matches a definition", st.Text)
		assert.Regexp(t, `^internal/runner/runner_test\.go:\d+$`, st.Match.Location, "the handler is in trivialSteps, named from the module root")
	}
	assert.Equal(t, `^a step that fails$`, beta.Steps[1].Match.Pattern)
	assert.NotEqual(t, beta.Steps[0].Match.Location, beta.Steps[1].Match.Location, "each step names its own definition")

	data, err := os.ReadFile(filepath.Join(r.archive.Dir(), "cucumber.json"))
	require.NoError(t, err)
	var feats []struct {
		URI      string `json:"uri"`
		Elements []struct {
			Steps []struct {
				Keyword string `json:"keyword"`
				Line    int    `json:"line"`
				Match   *struct {
					Location string `json:"location"`
				} `json:"match"`
			} `json:"steps"`
		} `json:"elements"`
	}
	require.NoError(t, json.Unmarshal(data, &feats))
	require.Len(t, feats, 1, "only the selected scenario's feature")
	require.Len(t, feats[0].Elements, 1)
	steps := feats[0].Elements[0].Steps
	require.Len(t, steps, 3)
	for i, kw := range []string{"Given ", "When ", "Then "} {
		assert.Equal(t, kw, steps[i].Keyword)
		assert.Equal(t, 4+i, steps[i].Line)
	}
	for i, st := range steps {
		require.NotNil(t, st.Match, "step %d", i)
		assert.Equal(t, beta.Steps[i].Match.Location, st.Match.Location, "step %d", i)
	}
}
