package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/ksqlresult"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/results"
)

// The attempts read from kintone get the millisecond times of the Execution Result files
// kSQL-Flow left in the scenario's KSQL_FLOW_WORKDIR, matched by node_attempt_id; an attempt
// without a file keeps its minutes, and a file that cannot be read is a note, not a failure.
func TestAttemptsGetTheirResultTimes(t *testing.T) {
	st, err := scenario.New("m5-x", nil, t.TempDir(), nil)
	require.NoError(t, err)
	minute := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	atts := []results.Attempt{{Node: "n1", AttemptNo: 1, StartedAt: minute}, {Node: "n2", AttemptNo: 1, StartedAt: minute}, {Node: "n3", AttemptNo: 1, StartedAt: minute}}
	ids := []string{"attempt_1", "attempt_2", ""}

	attachResults(st, atts, ids) // no FlowNet ran a node: nothing to attach, nothing to note
	assert.Nil(t, atts[0].Result)

	meta := filepath.Join(ksqlresult.WorkDir(st.WorkDir), "metadata")
	require.NoError(t, os.MkdirAll(meta, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(meta, "attempt_1.json"),
		[]byte(`{"attemptId":"attempt_1","startedAt":"2026-12-06T10:00:14.793Z","finishedAt":"2026-12-06T10:00:15.299Z","durationMs":583}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(meta, "attempt_9.json"), []byte(`{"attemptId":`), 0o600))
	attachResults(st, atts, ids)

	require.NotNil(t, atts[0].Result)
	assert.Equal(t, results.AttemptResult{StartedAt: minute.Add(14793 * time.Millisecond), FinishedAt: minute.Add(15299 * time.Millisecond), DurationMS: 583}, *atts[0].Result)
	assert.Nil(t, atts[1].Result, "no result file of its own")
	assert.Nil(t, atts[2].Result, "no attempt id")
	rec := &results.Scenario{}
	st.Evidence(rec)
	require.Len(t, rec.Notes, 1)
	assert.Equal(t, "timeline: execution results not all read", rec.Notes[0].What)
	assert.Contains(t, rec.Notes[0].Detail, "attempt_9.json")
}
