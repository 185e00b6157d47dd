package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
)

// runRecord is what the command-line tests read of a run.json.
type runRecord struct {
	State     string `json:"state"`
	Scenarios []struct {
		ID             string `json:"id"`
		Status         string `json:"status"`
		NotRunCategory string `json:"not_run_category"`
	} `json:"scenarios"`
	Totals struct {
		Total, Passed, Failed int
		NotRun                int `json:"not_run"`
		NotSelected           int `json:"not_selected"`
	} `json:"totals"`
}

func readRun(t *testing.T, dir string) runRecord {
	t.Helper()
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(repoRoot(), dir)
	}
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	var r runRecord
	require.NoError(t, json.Unmarshal(data, &r))
	return r
}

func statusesOf(r runRecord) map[string]string {
	out := map[string]string{}
	for _, s := range r.Scenarios {
		out[s.ID] = s.Status
	}
	return out
}

// Two request scenarios both read app-wide state (each first asserts that the request app
// holds no REQUESTED or ACCEPTED request, and their pollers claim whatever is pending): run at
// once they would see each other's requests on one emulator. Each runs on its own, so
// concurrency 4 gives what the serial run gives.
func TestAppWideReadersGiveTheSameResultsConcurrently(t *testing.T) {
	t.Parallel() // a long end-to-end run that mostly waits: the others of its kind run beside it
	if testing.Short() {
		t.Skip("acceptance run skipped in -short mode")
	}
	tags := "@p2-01-01-rerun or @p2-01-03-rejections"
	serial := flowtest(t, nil, "run", "--out", t.TempDir(), "--concurrency", "1", "--tags", tags)
	require.Equal(t, 0, serial.code, serial.stdout+serial.stderr)
	conc := flowtest(t, nil, "run", "--out", t.TempDir(), "--concurrency", "4", "--tags", tags)
	require.Equal(t, 0, conc.code, conc.stdout+conc.stderr)
	assert.Contains(t, conc.stdout, "concurrency 4: each scenario on a kintone emulator of its own")
	s, c := readRun(t, archiveDir(t, serial.stdout)), readRun(t, archiveDir(t, conc.stdout))
	assert.Equal(t, statusesOf(s), statusesOf(c))
	assert.Equal(t, "passed", statusesOf(c)["p2-01-01-rerun"])
	assert.Equal(t, "passed", statusesOf(c)["p2-01-03-rejections"])
}

// Shards 1/2 and 2/2 of a selection, merged, are the selection: every scenario once, the
// totals of one run, a clean leak scan; --repeat reports per scenario.
func TestShardsMergeAndRepeatOnSandbox(t *testing.T) {
	t.Parallel() // a long end-to-end run that mostly waits: the others of its kind run beside it
	if testing.Short() {
		t.Skip("acceptance run skipped in -short mode")
	}
	tags := "@m5-mid-failure or @m6-02-unknown-isolation or @m5-kill-unknown"
	out := t.TempDir()
	var dirs []string
	for _, k := range []string{"1/2", "2/2"} {
		r := flowtest(t, nil, "run", "--out", out, "--tags", tags, "--shard", k)
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		dirs = append(dirs, archiveDir(t, r.stdout))
	}
	m := flowtest(t, nil, append([]string{"archive", "merge", "--out", out}, dirs...)...)
	require.Equal(t, 0, m.code, m.stdout+m.stderr)
	assert.Contains(t, m.stdout, "archive verify: no secret or raw app id")
	var merged string
	for _, e := range []string{"merged archive "} {
		i := indexOf(m.stdout, e)
		require.GreaterOrEqual(t, i, 0, m.stdout)
		merged = m.stdout[i+len(e):]
		merged = merged[:indexOf(merged, " (from")]
	}
	for _, d := range append(dirs, merged) {
		requireSchemaValid(t, d)
	}
	assert.Contains(t, m.stdout, "matches its schema")
	run := readRun(t, merged)
	assert.Equal(t, manifestSize(t), run.Totals.Total)
	assert.Equal(t, 3, run.Totals.Passed)
	assert.Equal(t, "complete", run.State)
	// Issue 43: what another shard ran is not selected in a shard and counted once in the
	// merge; what the tag expression left out stays not selected, in one line.
	assert.Equal(t, manifestSize(t)-3, run.Totals.NotSelected)
	assert.Equal(t, manifestSize(t)-3, run.Totals.NotRun)
	assert.Contains(t, m.stdout, fmt.Sprintf("3 passed, 0 failed, 0 not run, %d not selected, of %d", manifestSize(t)-3, manifestSize(t)))
	// The merged archive has its own summary.md (the workflow's job summary): the merge's
	// verdict and result line, not a shard's.
	summary, err := os.ReadFile(filepath.Join(merged, "summary.md"))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "**passed**")
	assert.Contains(t, string(summary), fmt.Sprintf("3 passed, 0 failed, 0 not run, %d not selected, of %d", manifestSize(t)-3, manifestSize(t)))
	for _, d := range dirs {
		shard := readRun(t, d)
		assert.Equal(t, shard.Totals.Total-shard.Totals.Passed, shard.Totals.NotSelected, d)
	}
	// The merged messages.ndjson has every scenario of the shards, with the feature texts
	// the shards' streams carried: none is left out for want of its text.
	stream, err := os.ReadFile(filepath.Join(merged, results.MessagesFile))
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(stream), `{"testCaseStarted":`))
	assert.Contains(t, string(stream), `{"testRunFinished":{"success":true,`, "nothing left out, no message")

	// The same shard twice overlaps: refused.
	bad := flowtest(t, nil, "archive", "merge", "--out", out, dirs[0], dirs[0])
	assert.Equal(t, 2, bad.code, bad.stdout+bad.stderr)

	rep := flowtest(t, nil, "run", "--out", out, "--tags", "@m6-02-unknown-isolation", "--repeat", "2")
	require.Equal(t, 0, rep.code, rep.stdout+rep.stderr)
	assert.Regexp(t, `m6-02-unknown-isolation\s+2/2 passed\s+stable`, rep.stdout)
	assert.Contains(t, rep.stdout, "repeat: 0 flaky")
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
