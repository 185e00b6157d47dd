package results

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results/render"
)

// scopeArchive finishes an archive as a run does: a record for every manifest entry, run.json
// rows with their not-run categories. It ran p-01 (passed) and b-01 (blocked); n-01 (not
// implemented) and w-01 (another platform) were selected and did not run; t-01 and t-02 (the
// tag expression), r-01 (--rerun) and s-01 (another shard) were left out by the selection.
func scopeArchive(t *testing.T) (dir string, run *Run) {
	t.Helper()
	start := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	a, err := Create(t.TempDir(), "@p2-16", start, testRedactor())
	require.NoError(t, err)
	notRun := []struct{ id, reason, category string }{
		{"n-01", "not implemented: no feature file", NotRunNotImplemented},
		{"w-01", "needs windows (this is linux)", NotRunPlatform},
		{"t-01", "filtered by tag expression", NotRunTag},
		{"t-02", "filtered by tag expression", NotRunTag},
		{"r-01", "filtered: did not fail in the archive being rerun", NotRunTag},
		{"s-01", ReasonOtherShardPrefix + ": 2/2", NotRunTag},
	}
	order := []string{"p-01", "b-01"}
	require.NoError(t, a.WriteScenario(sampleScenario("p-01", StatusPassed)))
	blocked := sampleScenario("b-01", StatusBlocked)
	blocked.Reason = "blocked: a pending REQUESTED request is in the request app"
	require.NoError(t, a.WriteScenario(blocked))
	category := map[string]string{}
	for _, n := range notRun {
		order = append(order, n.id)
		category[n.id] = n.category
		require.NoError(t, a.WriteScenario(&Scenario{SchemaVersion: SchemaVersion, ID: n.id, Feature: "F " + n.id, Series: "x",
			Tags: []string{"@" + n.id}, Status: StatusNotRun, Reason: n.reason, Start: start, End: start}))
	}
	a.SetOrder(order)
	sums := a.Summaries()
	for i := range sums {
		sums[i].NotRunCategory = category[sums[i].ID]
	}
	run = &Run{Target: "sandbox", TagExpression: "@p2-16", RunOrder: order, Scenarios: sums, Totals: ComputeTotals(sums),
		Start: start, End: start.Add(time.Minute)}
	require.NoError(t, a.Finish(run))
	return a.Dir(), run
}

var (
	selectedIDs    = []string{"p-01", "b-01", "n-01", "w-01"}
	notSelectedIDs = []string{"t-01", "t-02", "r-01", "s-01"}
)

func readArchiveFile(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return string(data)
}

// Issue 43: the scope of a run is what was selected. The console, README.md and index.html
// count what the selection left out in one line and list none of it; the selected scenarios
// that did not run keep their rows and reasons.
func TestNotSelectedIsOneLineInTheConsoleReadmeAndPage(t *testing.T) {
	dir, run := scopeArchive(t)
	const totals = "1 passed, 0 failed, 1 blocked, 2 not run, 4 not selected, of 8"
	assert.Equal(t, totals, RunTotalsText(run), "the console's closing line")
	const line = "4 not selected (2 filtered by tag expression, 1 filtered: did not fail in the archive being rerun, 1 in other shards); not listed, run.json keeps their rows."

	readme := readArchiveFile(t, dir, "README.md")
	assert.Contains(t, readme, "- Result: "+totals+"\n")
	assert.Contains(t, readme, "\n"+line+"\n")
	assert.Contains(t, readme, "| n-01 | not implemented | not implemented: no feature file |")
	assert.Contains(t, readme, "| w-01 | other platform | needs windows (this is linux) |")
	assert.Contains(t, readme, "| b-01 | 2 | **blocked** |")
	assert.Contains(t, readme, "## Run order\n\n1. p-01\n2. b-01\n3. n-01\n4. w-01\n\n")

	page := readArchiveFile(t, dir, render.IndexFile)
	assert.Contains(t, page, "· "+totals+"</p>")
	assert.Contains(t, page, `<p class="muted">`+line+`</p>`)
	assert.Contains(t, page, "<tr><td>n-01</td><td>not implemented</td><td>not implemented: no feature file</td></tr>")
	assert.Contains(t, page, "<tr><td>w-01</td><td>other platform</td><td>needs windows (this is linux)</td></tr>")
	assert.Contains(t, page, `<a href="#s-b-01">b-01</a>`)

	for _, id := range notSelectedIDs {
		assert.NotContains(t, readme, id, "README.md lists a scenario the selection left out")
		assert.NotContains(t, page, id, "index.html lists a scenario the selection left out")
	}
	assert.Equal(t, 1, strings.Count(readme, "not selected ("), "one line, not a row each")
	assert.Equal(t, 1, strings.Count(page, "not selected ("), "one line, not a row each")
}

// JUnit and Cucumber have no test case or element for what the selection left out; the
// selected not-run scenarios stay skipped with their reasons, the blocked one an error.
func TestNotSelectedIsAbsentFromJUnitAndCucumber(t *testing.T) {
	dir, _ := scopeArchive(t)

	var ju render.JUnitSuites
	require.NoError(t, xml.Unmarshal([]byte(readArchiveFile(t, dir, "junit.xml")), &ju))
	assert.Equal(t, 4, ju.Tests)
	assert.Equal(t, 2, ju.Skipped, "n-01 and w-01")
	assert.Equal(t, 1, ju.Errors, "b-01")
	junit := readArchiveFile(t, dir, "junit.xml")
	assert.Contains(t, junit, `<skipped message="not implemented: no feature file">`)
	assert.Contains(t, junit, `<skipped message="needs windows (this is linux)">`)

	var cuke []render.CucumberFeature
	require.NoError(t, json.Unmarshal([]byte(readArchiveFile(t, dir, "cucumber.json")), &cuke))
	var names []string
	for _, f := range cuke {
		for _, e := range f.Elements {
			names = append(names, e.Name)
		}
	}
	assert.ElementsMatch(t, []string{"cancel and claim race", "cancel and claim race", "n-01", "w-01"}, names)
	assert.Contains(t, cukeDescriptions(cuke), "flowtest status: not-run: not implemented: no feature file", "a selected not-run scenario keeps its reason")
	assert.Contains(t, cukeDescriptions(cuke), "flowtest status: not-run: needs windows (this is linux)")
	assert.Contains(t, cukeDescriptions(cuke), "flowtest status: blocked: a pending REQUESTED request is in the request app")

	cucumber := readArchiveFile(t, dir, "cucumber.json")
	for _, id := range notSelectedIDs {
		assert.NotContains(t, junit, id)
		assert.NotContains(t, cucumber, id)
	}
}

// run.json keeps a machine-readable row for every scenario, those left out too (archive
// merge, --rerun and the gate read them), counts them in totals.not_selected, matches its
// schema and holds together with the files beside it.
func TestRunJSONKeepsNotSelectedRowsAndCountsThem(t *testing.T) {
	dir, _ := scopeArchive(t)
	_, got, err := ReadArchive(dir)
	require.NoError(t, err)
	assert.Equal(t, Totals{Total: 8, Passed: 1, Blocked: 1, NotRun: 6, NotSelected: 4, DurationMS: 3000}, got.Totals)
	var ids []string
	for _, s := range got.Scenarios {
		ids = append(ids, s.ID)
		assert.Equal(t, contains(notSelectedIDs, s.ID), s.NotSelected(), s.ID)
	}
	assert.Equal(t, append(append([]string(nil), selectedIDs...), notSelectedIDs...), ids)
	requireValid(t, dir)
	assert.Empty(t, CheckIntegrity(dir))

	// An archive from before totals.not_selected still holds together: its cucumber.json
	// lists every scenario and its totals leave the count out.
	editRunTotals(t, dir, func(m map[string]any) { delete(m, "not_selected") })
	feats := []map[string]any{{"elements": make([]any, 8)}}
	data, err := json.Marshal(feats)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cucumber.json"), data, 0o644))
	assert.Empty(t, CheckIntegrity(dir))
}

// cukeDescriptions are the descriptions of every scenario element of a cucumber.json.
func cukeDescriptions(feats []render.CucumberFeature) []string {
	var out []string
	for _, f := range feats {
		for _, e := range f.Elements {
			out = append(out, e.Desc)
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func editRunTotals(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	file := filepath.Join(dir, "run.json")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	m := map[string]any{}
	require.NoError(t, json.Unmarshal(data, &m))
	edit(m["totals"].(map[string]any))
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data, 0o644))
}

// An empty selection (--allow-empty) has no run order of its own: README says none was
// selected rather than listing what the tag expression left out.
func TestAnEmptySelectionListsNothing(t *testing.T) {
	sums := []ScenarioSummary{
		{ID: "a-01", Status: StatusNotRun, NotRunCategory: NotRunTag, Reason: "filtered by tag expression"},
		{ID: "a-02", Status: StatusNotRun, NotRunCategory: NotRunTag, Reason: "filtered by tag expression"},
	}
	run := &Run{RunOrder: []string{"a-01", "a-02"}, Scenarios: sums, Totals: ComputeTotals(sums)}
	readme := string(render.Readme(render.NewView(run, nil, nil)))
	assert.Contains(t, readme, "- Result: 0 passed, 0 failed, 0 not run, 2 not selected, of 2\n")
	assert.Contains(t, readme, "## Run order\n\n(none selected)\n")
	assert.Contains(t, readme, "Every selected scenario ran.\n\n2 not selected (2 filtered by tag expression); not listed, run.json keeps their rows.\n")
	assert.NotContains(t, readme, "a-01")
}
