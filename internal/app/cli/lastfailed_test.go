package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// row is one scenario of a hand-made archive: its status, reason and not-run category.
type row struct{ id, status, reason, category string }

// runArchive writes a finished archive under out at the given time, made by a run of tags
// (and shard) on the sandbox, with rows in run order and run.json's summaries of them.
func runArchive(t *testing.T, out string, at time.Time, tags, shard string, rows ...row) string {
	t.Helper()
	a, err := results.Create(out, label(tags), at, redact.New(nil, nil))
	require.NoError(t, err)
	run := &results.Run{Target: "sandbox", TagExpression: tags, Environment: map[string]string{}, End: at.Add(time.Minute)}
	if shard != "" {
		run.Environment["shard"] = shard
	}
	for _, r := range rows {
		run.RunOrder = append(run.RunOrder, r.id)
	}
	a.SetOrder(run.RunOrder)
	for _, r := range rows {
		s := &results.Scenario{SchemaVersion: results.SchemaVersion, ID: r.id, Feature: "f", Series: "m5", Tags: []string{"@" + r.id, "@m5"},
			Status: r.status, Reason: r.reason, Start: at, End: at}
		require.NoError(t, a.WriteScenario(s))
		run.Scenarios = append(run.Scenarios, results.ScenarioSummary{ID: r.id, Feature: "f", Series: "m5", Tags: s.Tags,
			Status: r.status, Reason: r.reason, NotRunCategory: r.category, File: "scenarios/" + r.id + ".json"})
	}
	require.NoError(t, a.Finish(run))
	return a.Dir()
}

// --last-failed selects the failed (failed, blocked, interrupted) and the selected-not-run
// scenarios of the newest archive of the same --tags, target and --shard under --out:
// not an older one, not another selection's, not a gate's; none is a clear refusal.
func TestLastFailedSelection(t *testing.T) {
	out := t.TempDir()
	day := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	older := runArchive(t, out, day, "@m5", "", row{"m5-resume", results.StatusFailed, "boom", ""})
	newest := runArchive(t, out, day.Add(time.Hour), "@m5", "",
		row{"m5-serial-success", results.StatusPassed, "", ""},
		row{"m5-mid-failure", results.StatusFailed, "step failed", ""},
		row{"m5-resume", results.StatusNotRun, "--fail-fast: stopped after m5-mid-failure failed", results.NotRunInterrupted},
		row{"m5-lock-conflict", results.StatusBlocked, "blocked: iconv unavailable", ""},
		row{"m6-01-resume-identity", results.StatusNotRun, "filtered by tag expression", results.NotRunTag})
	runArchive(t, out, day.Add(2*time.Hour), "@m6", "", row{"m6-01-resume-identity", results.StatusFailed, "x", ""})
	runArchive(t, out, day.Add(3*time.Hour), "@m5", "1/2", row{"m5-resume", results.StatusFailed, "x", ""})
	require.NotEqual(t, older, newest)

	f := runFlags{common: common{tags: "@m5", target: "sandbox"}, out: out, lastFailed: true}
	require.NoError(t, f.resolveLastFailed())
	assert.Equal(t, newest, f.lastFailedFrom, "the newest archive of @m5 without a shard")
	assert.Equal(t, []string{"m5-mid-failure", "m5-resume", "m5-lock-conflict"}, f.lastFailedIDs, "failed, selected not run, blocked; in run order")

	f = runFlags{common: common{tags: "@m5", target: "sandbox"}, out: out}
	f.shard = "1/2"
	require.NoError(t, f.resolveLastFailed())
	assert.Equal(t, []string{"m5-resume"}, f.lastFailedIDs, "the shard's own archive")

	f = runFlags{common: common{tags: "@m7", target: "sandbox"}, out: out}
	err := f.resolveLastFailed()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--last-failed: no archive of this selection under "+out+"/")

	allPassed := t.TempDir()
	runArchive(t, allPassed, day, "", "", row{"m5-resume", results.StatusPassed, "", ""})
	f = runFlags{common: common{target: "sandbox"}, out: allPassed}
	err = f.resolveLastFailed()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "every selected scenario passed")
}

// The command: --last-failed runs exactly those scenarios (the others not selected), and is
// refused with --rerun and where no archive of the selection exists.
func TestRunLastFailed(t *testing.T) {
	out := t.TempDir()
	runArchive(t, out, time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), "@m5", "",
		row{"m5-serial-success", results.StatusFailed, "step failed", ""},
		row{"m5-resume", results.StatusPassed, "", ""})
	r := flowtest(t, nil, "run", "--dry-run", "--out", out, "--tags", "@m5", "--last-failed")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "--last-failed: 1 scenario(s) that failed or did not run in "+out)
	assert.Regexp(t, `(?m)^1 +m5-serial-success +m5 +yes`, r.stdout)
	assert.NotRegexp(t, `(?m)^\d+ +m5-resume +m5 +yes`, r.stdout)

	r = flowtest(t, nil, "run", "--out", t.TempDir(), "--tags", "@m5", "--last-failed")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--last-failed: no archive of this selection under")

	r = flowtest(t, nil, "run", "--out", out, "--rerun", out, "--last-failed")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--last-failed with --rerun")
}
