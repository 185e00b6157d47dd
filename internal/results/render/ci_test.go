package render

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// ciFeature is the feature file of ciFixture's records, by the path they name.
const ciFeature = "s/serial.feature"

// ciFixture is a run of testdata/ci/serial.feature as the CI formats see it: m5-01 passed,
// m5-02 failed at its last step, m5-03 (one Examples block of an outline) selected but not
// implemented, m5-04 (the outline's other block) and m5-09 left out by the selection.
func ciFixture(t *testing.T) (*record.Run, []*record.Scenario, map[string][]byte) {
	t.Helper()
	src, err := os.ReadFile("testdata/ci/serial.feature")
	require.NoError(t, err)
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	match := func(line int, pattern string) *record.StepMatch {
		return &record.StepMatch{Location: "internal/steps/kit/runs.go:" + strconv.Itoa(line), Pattern: pattern}
	}
	sandbox := record.Step{Keyword: "Given", Text: "Given a sandbox", Status: "passed", DurationMS: 100, Line: 4, Start: t0, Match: match(10, "^a sandbox$")}
	runs := record.Step{Keyword: "When", Text: "When the network runs", Status: "passed", DurationMS: 900, Line: 8, Start: t0.Add(100 * time.Millisecond), Match: match(20, "^the network runs$")}
	scen := func(id, name string, line int, status string, steps ...record.Step) *record.Scenario {
		return &record.Scenario{SchemaVersion: 1, ID: id, Name: name, Feature: "serial runs", FeatureFile: ciFeature, Line: line, Series: "m5",
			Tags: []string{"@" + id, "@m5"}, Status: status, Start: t0, End: t0.Add(2 * time.Second), DurationMS: 2000, Steps: steps, Cleanup: record.Cleanup{OK: true}}
	}
	passed := scen("m5-01", "one run succeeds", 7, record.StatusPassed, sandbox, runs,
		record.Step{Keyword: "Then", Text: `Then the run is "SUCCEEDED"`, Status: "passed", DurationMS: 50, Line: 9, Start: t0.Add(time.Second), Match: match(30, `^the run is "([A-Z]+)"$`)})
	failed := scen("m5-02", "a node fails", 12, record.StatusFailed, sandbox, runs,
		record.Step{Keyword: "Then", Text: `Then the run is "FAILED"`, Status: "failed", Error: "run status: expected FAILED, saw SUCCEEDED", DurationMS: 50, Line: 14, Start: t0.Add(time.Second), Match: match(30, `^the run is "([A-Z]+)"$`)})
	failed.Reason = "step failed"
	notImpl := scen("m5-03", "a wait of 1 seconds", 17, record.StatusNotRun,
		record.Step{Keyword: "Given", Text: "Given a sandbox", Status: "skipped", Line: 4},
		record.Step{Keyword: "Given", Text: "Given a wait of 1 seconds", Status: "skipped", Line: 18})
	notImpl.Reason = "not implemented"
	leftOut := scen("m5-09", "left out by the tag", 31, record.StatusNotRun, record.Step{Keyword: "Then", Text: "Then nothing happens", Status: "skipped", Line: 32})
	leftOut.Reason = "filtered by tag"
	exit := 1
	run := &record.Run{SchemaVersion: 1, RunnerVersion: "v0.0.0-test", Target: "sandbox", OS: "linux/amd64", TagExpression: "@m5 and not @m5-09",
		Start: t0, End: t0.Add(3 * time.Second), ExitCode: &exit, State: record.RunComplete,
		Scenarios: []record.ScenarioSummary{
			{ID: "m5-01", Status: record.StatusPassed}, {ID: "m5-02", Status: record.StatusFailed},
			{ID: "m5-03", Status: record.StatusNotRun, NotRunCategory: record.NotRunNotImplemented},
			{ID: "m5-04", Status: record.StatusNotRun, NotRunCategory: record.NotRunTag},
			{ID: "m5-09", Status: record.StatusNotRun, NotRunCategory: record.NotRunTag},
		}}
	return run, []*record.Scenario{passed, failed, notImpl, leftOut}, map[string][]byte{ciFeature: src}
}
