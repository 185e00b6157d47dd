package scenario

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/results"
)

// Wired as the runner wires it, every wait of a step ends up in the scenario record.
func TestWaitsReachTheRecordThroughOnDone(t *testing.T) {
	st, err := New("s1", nil, t.TempDir(), nil)
	require.NoError(t, err)
	ctx := wait.WithConfig(With(context.Background(), st), wait.Config{Progress: io.Discard, Scale: 2, OnDone: st.AddWait})

	require.NoError(t, wait.For(ctx, wait.Limit{Name: "Quick", Base: time.Second, Interval: time.Millisecond}, "ready",
		func(context.Context) (bool, string, error) { return true, "status=DONE", nil }))
	require.Error(t, wait.Until(ctx, "never", 20*time.Millisecond, 5*time.Millisecond,
		func(context.Context) (bool, string, error) { return false, "", errors.New("kintone 503") }))

	var rec results.Scenario
	st.Evidence(&rec)
	require.Len(t, rec.Waits, 2)
	assert.False(t, rec.Waits[0].Start.IsZero(), "a wait records when it started (for the timeline)")
	assert.Equal(t, results.Wait{Name: "Quick", What: "ready", LimitMS: 2000, ElapsedMS: rec.Waits[0].ElapsedMS,
		Outcome: results.WaitReached, Checks: 1, LastObservation: "status=DONE", Start: rec.Waits[0].Start}, rec.Waits[0])
	assert.Equal(t, "", rec.Waits[1].Name)
	assert.Equal(t, int64(20), rec.Waits[1].LimitMS)
	assert.Equal(t, results.WaitTimedOut, rec.Waits[1].Outcome)
	assert.Equal(t, "kintone 503", rec.Waits[1].LastError)
	assert.GreaterOrEqual(t, rec.Waits[1].ElapsedMS, int64(20))
}

// wait's outcome spellings are the record's.
func TestWaitOutcomesMatchTheRecord(t *testing.T) {
	assert.Equal(t, results.WaitReached, string(wait.Reached))
	assert.Equal(t, results.WaitTimedOut, string(wait.TimedOut))
	assert.Equal(t, results.WaitGaveUp, string(wait.GaveUp))
}
