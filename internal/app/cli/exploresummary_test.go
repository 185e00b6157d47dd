package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/app/explorer"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

func aReport() *explorer.Report {
	return &explorer.Report{Scenario: "m6-race", Strategy: "random", Seed: 7, SchedulesRun: 50, DistinctOrder: 12, Duplicates: 38,
		Branches: map[string]int{"archive-first": 20, "resume-first": 30}, Passed: 49,
		Violations: make([]explorer.Violating, 1), Elapsed: 120, PerMinute: 25}
}

// The text summary shows the outcome branches as lines, most schedules first, never a Go
// map (`branches map[…]`, issue 43).
func TestExploreSummaryTextHasNoGoMap(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, writeExploreSummary(&out, nil, nil, exploreSummary(aReport(), "test-results/d/x")))
	assert.Equal(t, "explore m6-race: 50 schedules, 12 distinct write orders (38 seen before), 1 violations, 120 s (25.0/min) — test-results/d/x\n"+
		"  outcome branches:\n"+
		"    resume-first   30 of 50 schedules\n"+
		"    archive-first  20 of 50 schedules\n", out.String())
	assert.NotContains(t, out.String(), "map[")

	out.Reset()
	r := aReport()
	r.Branches = map[string]int{"": 3}
	require.NoError(t, writeExploreSummary(&out, nil, nil, exploreSummary(r, "d")))
	assert.Contains(t, out.String(), "    (no branch noted)  3 of 50 schedules\n")
}

// explore --json: the same facts as one object, decoded by encoding/json, redacted like the
// console; the text is not printed beside it.
func TestExploreSummaryJSON(t *testing.T) {
	var text, js bytes.Buffer
	r := aReport()
	r.Scenario = "m6-race-s3cretTokenValue1"
	red := redact.New(map[string]string{"KINTONE_TOKEN": "s3cretTokenValue1"}, nil)
	require.NoError(t, writeExploreSummary(&text, &js, red, exploreSummary(r, "test-results/d/x")))
	assert.Empty(t, text.String())
	assert.NotContains(t, js.String(), "s3cretTokenValue1")
	var got exploreSummaryJSON
	decodeJSON(t, js.String(), &got)
	assert.Equal(t, exploreSummaryJSON{Scenario: got.Scenario, Strategy: "random", Seed: 7, Schedules: 50, DistinctWriteOrders: 12, SeenBefore: 38,
		Passed: 49, Violations: 1, Branches: []branchCountJSON{{"resume-first", 30}, {"archive-first", 20}},
		ElapsedSeconds: 120, SchedulesPerMinute: 25, Archive: "test-results/d/x"}, got)
	assert.Contains(t, got.Scenario, "[REDACTED")
}

// --json is explore's own switch: it takes no value from the next argument.
func TestExploreJSONIsASwitch(t *testing.T) {
	var f exploreFlags
	p := parseRow(t, f.bind, "x", "--json", "--concurrency", "2")
	require.Equal(t, 0, p.code, p.stderr)
	assert.True(t, f.json)
	assert.Equal(t, []string{"x"}, p.args, "--json took no value: the next flag stays a flag")
	assert.Equal(t, "2", *f.run.config["concurrency"])
	var g exploreFlags
	require.Equal(t, 0, parseRow(t, g.bind, "x", "--json=false").code)
	assert.False(t, g.json)
}

// explore --json end to end: stdout is the one summary object (decoded strictly), the
// progress and the archive lines went to stderr, and the object agrees with explore.json.
func TestExploreCommandJSON(t *testing.T) {
	t.Parallel() // an end-to-end run that mostly waits
	if testing.Short() {
		t.Skip("explore run skipped in -short mode")
	}
	out := t.TempDir()
	r := flowtest(t, nil, "explore", "p2-11-03-duplicates", "--schedules", "1", "--seed", "1", "--json", "--product", "reference", "--out", out)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	var got exploreSummaryJSON
	decodeJSON(t, r.stdout, &got)
	rep := readExploreReport(t, out)
	assert.Equal(t, "p2-11-03-duplicates", got.Scenario)
	assert.Equal(t, 1, got.Schedules)
	assert.Equal(t, rep.Passed, got.Passed)
	assert.Equal(t, len(rep.Violations), got.Violations)
	require.Len(t, got.Branches, 1)
	assert.Equal(t, 1, got.Branches[0].Schedules)
	assert.Contains(t, r.stderr, "schedule 1: ", "the progress is on stderr")
	assert.Contains(t, r.stderr, "archive verify: no secret or raw app id in "+got.Archive)
}
