package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
