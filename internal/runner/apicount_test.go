package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/results"
)

// A scenario's requests (its steps', its cleanup's) land in its record by app role; the run's
// counts in run.json hold them and what was counted on the run outside any scenario.
func TestRecordsCountTheScenariosRequestsByRole(t *testing.T) {
	fsys := selfFeatures(nil)
	items := plan(t, fsys, "@alpha or @delta")
	run := apicount.New()
	run.Add("99", "GET", 200) // e.g. a preflight read, on an app of no role
	r := execute(t, fsys, items, Options{
		API:      run,
		AppRoles: map[string]string{"17": "state", "18": "log"},
		BeforeScenario: func(ctx context.Context, st *scenario.State) error {
			st.Defer("delete", func(ctx context.Context) error {
				apicount.FromContext(ctx).From(apicount.KsqlFlow).Add("17", "DELETE", 200)
				return nil
			})
			return nil
		},
		Initialize: func(sc *godog.ScenarioContext, reg stepdef.Registry) {
			reg.Step(`^a step that passes$`, func(ctx context.Context) error {
				apicount.FromContext(ctx).Add("17", "GET", 429)
				return nil
			})
			reg.Step(`^another step that passes$`, func(ctx context.Context) error {
				apicount.FromContext(ctx).Add("18", "GET", 200)
				return nil
			})
		},
	})
	recs := map[string]*results.Scenario{}
	for _, s := range r.res.Scenarios {
		recs[s.ID] = s
	}
	assert.Equal(t, results.APIRequests{
		"state": {Requests: 2, ByMethod: map[string]int64{"GET": 1, "DELETE": 1}, ByOrigin: map[string]int64{"harness": 1, "ksql-flow": 1}, Throttled: 1},
		"log":   {Requests: 1, ByMethod: map[string]int64{"GET": 1}, ByOrigin: map[string]int64{"harness": 1}},
	}, recs["alpha"].APIRequests, "who sent each request is kept")
	assert.Equal(t, int64(2), recs["delta"].APIRequests.Total())

	data, err := os.ReadFile(filepath.Join(r.archive.Dir(), "run.json"))
	require.NoError(t, err)
	var got results.Run
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, results.APIRequests{
		"state": {Requests: 4, ByMethod: map[string]int64{"GET": 2, "DELETE": 2}, ByOrigin: map[string]int64{"harness": 2, "ksql-flow": 2}, Throttled: 2},
		"log":   {Requests: 1, ByMethod: map[string]int64{"GET": 1}, ByOrigin: map[string]int64{"harness": 1}},
		"other": {Requests: 1, ByMethod: map[string]int64{"GET": 1}, ByOrigin: map[string]int64{"harness": 1}},
	}, got.APIRequests, "no raw app id in run.json")
}
