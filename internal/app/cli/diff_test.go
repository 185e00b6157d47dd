package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// diffArchive writes a finished archive of two scenarios whose differential histories hold
// a NETWORK_RUN of the given status (d-01) and a process with the given exit code (d-02).
func diffArchive(t *testing.T, status string, exit int) string {
	t.Helper()
	a, err := results.Create(t.TempDir(), "diff", time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC), redact.New(nil, nil))
	require.NoError(t, err)
	order := []string{"d-01", "d-02"}
	a.SetOrder(order)
	start := time.Date(2026, 12, 5, 10, 0, 1, 0, time.UTC)
	recs := []results.RawRecord{{App: "state", Fields: map[string]string{"record_type": "NETWORK_RUN", "status": status,
		"run_id": "run-" + status, "started_at": start.Format(time.RFC3339)}}}
	procs := []results.Process{{Name: "flownet-run", Argv: []string{"flownet", "run"}, ExitCode: &exit, StdoutTail: "done\n"}}
	for _, id := range order {
		require.NoError(t, a.WriteScenario(&results.Scenario{SchemaVersion: results.SchemaVersion, ID: id, Feature: "f", Series: "d",
			Tags: []string{"@" + id}, Status: results.StatusPassed, Start: start, End: start.Add(time.Second), DurationMS: 1000,
			Processes: procs, Differential: results.NormaliseHistory(recs, procs, nil, nil)}))
	}
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", RunOrder: order, End: time.Now()}))
	return a.Dir()
}

func TestArchiveDiffEqualHistoriesPass(t *testing.T) {
	a, b := diffArchive(t, "SUCCESS", 0), diffArchive(t, "SUCCESS", 0)
	// The differential history passes the archive's schema check.
	v := flowtest(t, nil, "archive", "verify", a)
	require.Equal(t, 0, v.code, v.stdout+v.stderr)
	r := flowtest(t, nil, "archive", "diff", "--known", filepath.Join(t.TempDir(), "absent.yaml"), a, b)
	assert.Equal(t, 2, r.code, "a named --known file must exist: "+r.stdout+r.stderr)
	r = flowtest(t, nil, "archive", "diff", a, filepath.Dir(filepath.Dir(b)))
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "2 scenarios compared: 0 unexplained differences")
}

func TestArchiveDiffReportsAndExplainsDifferences(t *testing.T) {
	a, b := diffArchive(t, "SUCCESS", 0), diffArchive(t, "FAILED", 1)
	r := flowtest(t, nil, "archive", "diff", a, b)
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "DIFF d-01  state/NETWORK_RUN[0].status\n    A: SUCCESS\n    B: FAILED\n")
	assert.Contains(t, r.stdout, "DIFF d-02  process/flownet-run[0].exit_code\n    A: 0\n    B: 1\n")

	known := filepath.Join(t.TempDir(), "known.yaml")
	require.NoError(t, os.WriteFile(known, []byte(`- scenario: "*"
  path: state/NETWORK_RUN[*].status
  reason: the two FlowNets judge the run differently
- scenario: "*"
  path: process/*.exit_code
  reason: the real CLI exits 1 here
- scenario: d-03
  path: status
  reason: no longer true
- scenario: d-02
  path: process/archive*
  reason: a race that fell the same way this time
  race: true
`), 0o644))
	r = flowtest(t, nil, "archive", "diff", "--known", known, a, b)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "    known: the two FlowNets judge the run differently\n")
	assert.Contains(t, r.stdout, "stale: d-03 status (no longer true): matches no difference")
	assert.Contains(t, r.stdout, "0 unexplained differences, 4 explained, 1 stale explanations, 1 race explanations unmatched")
	// An unmatched race entry is no stale one: the race fell the same way on both sides.
	assert.Contains(t, r.stdout, "race fell the same way: d-02 process/archive*: matches no difference this time")
	assert.NotContains(t, r.stdout, "stale: d-02")

	require.NoError(t, os.WriteFile(known, []byte("- scenario: d-01\n  path: status\n"), 0o644))
	r = flowtest(t, nil, "archive", "diff", "--known", known, a, b)
	assert.Equal(t, 2, r.code, "an entry without a reason is refused: "+r.stdout+r.stderr)
}
