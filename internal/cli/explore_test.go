package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/harness/explore"
	"github.com/ksqlflow/flowtest/internal/explorer"
)

func TestExploreArgsSplitOwnFlagsFromRunFlags(t *testing.T) {
	sp, rest, err := parseExploreArgs([]string{"p2-11-03-duplicates", "--schedules", "50", "--seed=7", "--strategy", "pct", "--depth", "2", "--concurrency", "3", "--keep-workdirs"})
	require.NoError(t, err)
	assert.Equal(t, "p2-11-03-duplicates", sp.id)
	assert.Equal(t, 50, sp.schedules)
	assert.Equal(t, uint64(7), sp.seed)
	assert.Equal(t, "pct", sp.strategy)
	assert.Equal(t, 2, sp.depth)
	assert.Equal(t, []string{"--concurrency", "3", "--keep-workdirs"}, rest)

	sp, _, err = parseExploreArgs([]string{"x", "--time", "2m"})
	require.NoError(t, err)
	assert.Equal(t, 2*time.Minute, sp.budget)
	assert.Zero(t, sp.schedules)
	sp, _, err = parseExploreArgs([]string{"x"})
	require.NoError(t, err)
	assert.Equal(t, 50, sp.schedules, "the default budget")
}

func TestExploreArgsRefusals(t *testing.T) {
	for args, want := range map[string][]string{
		"name the scenario first": {"--schedules", "3"},
		"not both":                {"x", "--schedules", "3", "--time", "1m"},
		"unknown strategy":        {"x", "--strategy", "chaos"},
		"needs a value":           {"x", "--seed"},
		"positive integer":        {"x", "--schedules", "0"},
		"dfs needs a preemption":  {"x", "--strategy", "dfs", "--bound", "-1"},
	} {
		_, _, err := parseExploreArgs(want)
		if assert.Error(t, err, "%v", want) {
			assert.Contains(t, err.Error(), args)
		}
	}
	var out, errb bytes.Buffer
	assert.Equal(t, 2, cmdExplore([]string{"x", "--replay", "/nonexistent/1.json"}, &out, &errb, nil))
	assert.Contains(t, errb.String(), "replay file")
}

// An exploration on the sandbox writes its report, README and page; a schedule's whole
// order, given back as a replay file, releases the same writes in the same order: a
// schedule is named by signatures, never by ids or arrival times.
func TestExploreOnTheSandboxAndTheReplayOfASchedule(t *testing.T) {
	t.Parallel() // an end-to-end run that mostly waits
	if testing.Short() {
		t.Skip("explore run skipped in -short mode")
	}
	read := func(out string) explorer.Report {
		t.Helper()
		files, err := filepath.Glob(filepath.Join(out, "*", "*", "explore.json"))
		require.NoError(t, err)
		require.Len(t, files, 1)
		for _, f := range []string{"README.md", "index.html"} {
			assert.FileExists(t, filepath.Join(filepath.Dir(files[0]), f))
		}
		data, err := os.ReadFile(files[0])
		require.NoError(t, err)
		var rep explorer.Report
		require.NoError(t, json.Unmarshal(data, &rep))
		return rep
	}
	out := t.TempDir()
	r := flowtest(t, nil, "explore", "p2-11-03-duplicates", "--schedules", "2", "--seed", "1", "--out", out)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	rep := read(out)
	require.Equal(t, 2, rep.SchedulesRun)
	assert.Equal(t, 2, rep.Passed, "the correct sandbox passes every schedule")
	total := 0
	for _, n := range rep.Branches {
		total += n
	}
	assert.Equal(t, 2, total, "each schedule names its outcome branch: %v", rep.Branches)
	assert.Contains(t, r.stdout, "archive verify: no secret or raw app id")

	first := rep.Schedules[0]
	replay := filepath.Join(t.TempDir(), "schedule.json")
	data, err := json.Marshal(explorer.ReplayFile{Scenario: "p2-11-03-duplicates", Replay: first.Order})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(replay, data, 0o644))
	out = t.TempDir()
	r = flowtest(t, nil, "explore", "p2-11-03-duplicates", "--replay", replay, "--out", out)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	again := read(out)
	require.Len(t, again.Schedules, 1)
	assert.Equal(t, explore.Order(first.Order), explore.Order(again.Schedules[0].Order), "the replay released the schedule's writes in its order")
	assert.Equal(t, first.Branch, again.Schedules[0].Branch)
	assert.Zero(t, again.Schedules[0].Forced, "every write the replay named came")
}
