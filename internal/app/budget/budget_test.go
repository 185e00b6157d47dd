package budget

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ksqlflow/flowtest/internal/results"
)

var apps = []string{"audit", "log", "state"}

// Without an earlier run every scenario is estimated at the default on every app.
func TestCheckWithoutAnEarlierRunUsesTheDefault(t *testing.T) {
	v := Check(Input{Selected: []string{"a", "b", "c"}, Apps: apps, PerApp: 250})
	assert.Equal(t, Counts{"audit": 300, "log": 300, "state": 300}, v.Estimate)
	assert.Equal(t, []string{"audit", "log", "state"}, v.Over)
	assert.Contains(t, v.Problem(), "API budget of 250 requests per app: estimated audit app 300, log app 300, state app 300 (from 3 uncounted scenarios × 100 per app)")

	v = Check(Input{Selected: []string{"a", "b"}, Apps: apps, PerApp: 250})
	assert.True(t, v.OK(), v.Problem())
	assert.Empty(t, v.Problem())
	assert.Equal(t, int64(DefaultPerApp), Check(Input{Selected: []string{"a"}, Apps: apps}).PerApp)
	// All 43 scenarios fit the default budget on a first run.
	all := make([]string, 43)
	for i := range all {
		all[i] = string(rune('A' + i))
	}
	assert.True(t, Check(Input{Selected: all, Apps: apps}).OK())
}

// An earlier run's counts estimate the scenarios it counted, plus what it sent outside them;
// the rest get the default.
func TestCheckEstimatesFromAnEarlierRun(t *testing.T) {
	earlier := &Earlier{Basis: "2026-12-01/101010-all",
		Scenarios: map[string]Counts{"a": {"state": 40, "log": 5}, "b": {"state": 70}},
		Outside:   Counts{"state": 12, "audit": 3}}
	v := Check(Input{Selected: []string{"a", "b", "new"}, Apps: apps, Earlier: earlier, PerApp: 150, PerScenario: 10})
	assert.Equal(t, Counts{"state": 40 + 70 + 12 + 10, "log": 5 + 10, "audit": 3 + 10}, v.Estimate)
	assert.Equal(t, "the counts of 2 scenarios in 2026-12-01/101010-all and 1 uncounted scenarios × 10 per app", v.Basis)
	assert.True(t, v.OK())

	v = Check(Input{Selected: []string{"a", "b"}, Apps: apps, Earlier: earlier, PerApp: 100})
	assert.Equal(t, []string{"state"}, v.Over, "only the app over its budget is named")
	assert.Contains(t, v.Problem(), "estimated state app 122 (from the counts of 2 scenarios in 2026-12-01/101010-all)")
	assert.Equal(t, &results.APIBudget{PerApp: 100, Basis: v.Basis, Estimate: map[string]int64{"state": 122, "log": 5, "audit": 3}}, v.Record())
}

// An archive's records give each counted scenario's requests; run.json's surplus over them is
// what the run sent outside its scenarios.
func TestFromArchive(t *testing.T) {
	req := func(n int64) results.AppRequests {
		return results.AppRequests{Requests: n, ByMethod: map[string]int64{"GET": n}}
	}
	recs := []*results.Scenario{
		{ID: "a", Status: results.StatusPassed, APIRequests: results.APIRequests{"state": req(40), "log": req(5)}},
		{ID: "b", Status: results.StatusFailed, APIRequests: results.APIRequests{"state": req(70)}},
		{ID: "c", Status: results.StatusNotRun},
		{ID: "d", Status: results.StatusPassed}, // recorded before counting existed
	}
	run := &results.Run{APIRequests: results.APIRequests{"state": req(122), "log": req(5), "audit": req(3)}}
	e := FromArchive("x", recs, run)
	assert.Equal(t, map[string]Counts{"a": {"state": 40, "log": 5}, "b": {"state": 70}}, e.Scenarios)
	assert.Equal(t, Counts{"state": 12, "audit": 3}, e.Outside)
}
