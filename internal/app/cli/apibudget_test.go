package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// A live run whose estimate (from the counts of the last live archive of the same selection)
// exceeds the API budget is refused before anything runs: exit 2 naming the app, the
// estimate and the budget; no archive, no scenario, nothing written on the tenant. Within
// the budget the same run passes the check.
func TestLiveRunOverItsAPIBudgetIsRefusedBeforeAnythingRuns(t *testing.T) {
	s := newLiveSetup(t)
	out := t.TempDir()
	// The earlier live run of this selection: scenario r sent 40 requests on the state app,
	// the run 5 more outside it (its preflight).
	a, err := results.Create(out, "all", time.Now().Add(-time.Hour), redact.New(nil, nil))
	require.NoError(t, err)
	rec := &results.Scenario{SchemaVersion: results.SchemaVersion, ID: "r", Series: "s", Tags: []string{"@r", "@s"}, Status: results.StatusPassed,
		APIRequests: results.APIRequests{"state": {Requests: 40, ByMethod: map[string]int64{"GET": 30, "PUT": 10}}},
		Cleanup:     results.Cleanup{OK: true, Actions: []string{}}}
	require.NoError(t, a.WriteScenario(rec))
	require.NoError(t, a.Finish(&results.Run{Target: "live", Profile: "e2e", RunOrder: []string{"r"}, Scenarios: a.Summaries(),
		Totals: results.Totals{Total: 1, Passed: 1}, APIRequests: results.APIRequests{"state": {Requests: 45, ByMethod: map[string]int64{"GET": 35, "PUT": 10}}}}))
	earlier := filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(a.Dir())), filepath.Base(a.Dir())))

	var env []string
	for k, v := range s.env {
		env = append(env, k+"="+v)
	}
	run := func(budget string) result {
		return flowtest(t, env, "run", "--target", "live", "--features", s.features, "--lock-dir", t.TempDir(),
			"--out", out, "--api-budget", budget)
	}
	r := run("44")
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	for _, w := range []string{"api-budget", "the run would exceed the API budget of 44 requests per app", "estimated state app 45",
		"(from the counts of 1 scenarios in " + earlier + ")", "--api-budget"} {
		assert.Contains(t, r.stdout+r.stderr, w)
	}
	assert.NotContains(t, r.stdout+r.stderr, "START ", "no scenario started")
	assert.NotContains(t, r.stdout+r.stderr, "token-permissions", "no probe of the tenant ran")
	dates, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, dates, 1)
	runs, err := os.ReadDir(filepath.Join(out, dates[0].Name()))
	require.NoError(t, err)
	assert.Len(t, runs, 1, "a refused run writes no archive")

	hc, err := kintoneapi.HTTPClientWithCA(s.caFile)
	require.NoError(t, err)
	st := s.apps["state"]
	recs, err := kintoneapi.New(s.baseURL, hc, map[string]string{st.ID: st.Tokens["read"]}).GetAll(context.Background(), st.ID, "", nil)
	require.NoError(t, err)
	assert.Empty(t, recs, "nothing was written on the tenant")

	// Within the budget the check passes.
	ok := flowtest(t, env, "run", "--dry-run", "--target", "live", "--features", s.features, "--lock-dir", t.TempDir(), "--out", out, "--api-budget", "45")
	assert.Contains(t, ok.stdout, "PASS  api-budget", ok.stdout+ok.stderr)
}
