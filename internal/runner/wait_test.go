package runner

import (
	"bytes"
	"context"
	"testing"
	"testing/fstest"
	"time"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner/tagexpr"
)

// A step's waits run with the run's scale, print progress to the scenario's log and land in
// the scenario record.
func TestStepWaitsAreScaledLoggedAndRecorded(t *testing.T) {
	fsys := fstest.MapFS{
		"manifest.yaml": {Data: []byte("schema_version: 1\nscenarios:\n  - {id: waiter, series: w}\n")},
		"w.feature": {Data: []byte(`Feature: waits
  @waiter @w
  Scenario: a step waits
    Given a step that waits
`)},
	}
	m, err := LoadManifest(fsys, "manifest.yaml")
	require.NoError(t, err)
	feats, err := Discover(fsys, ".", m)
	require.NoError(t, err)
	items := Plan(m, feats, Selection{Expr: tagexpr.Expr{}, GOOS: "linux"})

	var seenLimit time.Duration
	limit := wait.Limit{Name: "Tiny", Base: 2 * time.Second, Interval: 2 * time.Millisecond}
	var progress bytes.Buffer
	res := Execute(context.Background(), Options{
		Features: fsys, Items: items, WorkRoot: t.TempDir(), Progress: &progress, TimeoutScale: 1.5,
		Initialize: func(sc *godog.ScenarioContext, reg stepdef.Registry) {
			reg.Step(`^a step that waits$`, func(ctx context.Context) error {
				seenLimit = limit.In(ctx)
				start := time.Now()
				return wait.For(ctx, limit, "a short while", func(context.Context) (bool, string, error) {
					return time.Since(start) > 20*time.Millisecond, "not yet", nil
				})
			})
		},
	})
	require.Equal(t, ExitPassed, res.Code, progress.String())
	assert.Equal(t, 3*time.Second, seenLimit)
	require.Len(t, res.Scenarios, 1)
	rec := res.Scenarios[0]
	require.Len(t, rec.Waits, 1)
	assert.Equal(t, "Tiny", rec.Waits[0].Name)
	assert.Equal(t, int64(3000), rec.Waits[0].LimitMS)
	assert.Equal(t, results.WaitReached, rec.Waits[0].Outcome)
	assert.Equal(t, "not yet", rec.Waits[0].LastObservation)
}
