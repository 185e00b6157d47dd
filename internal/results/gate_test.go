package results

import (
	"encoding/json"
	"encoding/xml"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results/render"
)

func gateScen(id, status string, required bool) GateScenario {
	return GateScenario{ID: id, Series: strings.SplitN(id, "-", 2)[0], Required: required, Status: status}
}

// Not run is never PASS; a failure is FAIL whatever else; blocked and interrupted make it
// INCOMPLETE; PASS needs every scenario passed or carried over.
func TestGateVerdicts(t *testing.T) {
	cases := []struct {
		name        string
		scen        []GateScenario
		interrupted bool
		want        string
		why         string
	}{
		{"all passed or carried", []GateScenario{gateScen("a-1", StatusPassed, true), gateScen("b-1", StatusCarriedOver, false)}, false, GatePass, "1 passed in this run, 1 carried over"},
		{"one not run", []GateScenario{gateScen("a-1", StatusPassed, true), gateScen("a-2", StatusNotRun, true)}, false, GateIncomplete, "1 not run (a-2)"},
		{"failure wins", []GateScenario{gateScen("a-1", StatusFailed, true), gateScen("a-2", StatusNotRun, true), gateScen("a-3", StatusBlocked, true)}, false, GateFail, "a-1"},
		{"blocked", []GateScenario{gateScen("a-1", StatusPassed, true), gateScen("a-2", StatusBlocked, true)}, false, GateIncomplete, "1 blocked (a-2)"},
		{"interrupted scenario", []GateScenario{gateScen("a-1", StatusInterrupted, true)}, false, GateIncomplete, "1 interrupted"},
		{"interrupted run", []GateScenario{gateScen("a-1", StatusPassed, true)}, true, GateIncomplete, "the run was interrupted"},
		{"unknown status counts as not run", []GateScenario{gateScen("a-1", "weird", true)}, false, GateIncomplete, "1 not run"},
		{"empty gate", nil, false, GateIncomplete, "no scenario"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, why := decideGate(tc.scen, tc.interrupted)
			assert.Equal(t, tc.want, v)
			assert.Contains(t, why, tc.why)
		})
	}
}

// CompleteGate takes each planned scenario's status from the run; a scenario the run has no
// record of, or filtered out, is not run.
func TestCompleteGateFromRun(t *testing.T) {
	g := &GateRecord{Gate: "r2", Scenarios: []GateScenario{
		{ID: "m5-serial-success", Required: true},
		{ID: "p2-01-01-rerun", Required: true},
		{ID: "csv1-01", Status: StatusCarriedOver, CarriedOver: &CarriedOver{Archive: "/a", Commit: "c0", Record: "scenarios/csv1-01.json", SHA256: "ab"}},
		{ID: "gone", Required: true},
		{ID: "filtered", Required: true},
	}}
	run := &Run{State: RunComplete, Scenarios: []ScenarioSummary{
		{ID: "m5-serial-success", Status: StatusPassed, File: "scenarios/m5-serial-success.json"},
		{ID: "p2-01-01-rerun", Status: StatusNotRun, NotRunCategory: NotRunNotImplemented, Reason: "not implemented: no feature file"},
		{ID: "filtered", Status: StatusNotRun, NotRunCategory: NotRunTag, Reason: "filtered by tag expression"},
	}}
	CompleteGate(g, run)
	assert.Equal(t, GateIncomplete, g.Verdict, "not implemented is never PASS")
	st := map[string]string{}
	for _, s := range g.Scenarios {
		st[s.ID] = s.Status
	}
	assert.Equal(t, map[string]string{"m5-serial-success": StatusPassed, "p2-01-01-rerun": StatusNotRun, "csv1-01": StatusCarriedOver, "gone": StatusNotRun, "filtered": StatusNotRun}, st)
	assert.Equal(t, GateCounts{Total: 5, Passed: 1, CarriedOver: 1, NotRun: 3}, g.Counts)
	assert.Equal(t, "scenarios/m5-serial-success.json", g.Scenarios[0].File)
}

// A gate run's archive holds gate.json (valid against its schema), run.json points to it, and
// README.md and index.html show the verdict, the carried-over evidence and the quoted diff.
func TestArchiveWritesTheGateRecord(t *testing.T) {
	a, err := Create(t.TempDir(), "gate-r2", time.Now(), testRedactor())
	require.NoError(t, err)
	diff := " src/cli/index.ts | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"
	g := &GateRecord{Gate: "r2", Title: "v1.0.0", Definition: "features/gates/r2.yaml", DefinitionSHA256: "00ff", Required: "@m5-serial-success",
		SUT: GateSUT{Commit: "c1c1", Given: "c1"}, Since: &GateSince{Archive: "/arch/a", Commit: "c0c0", Target: "sandbox"},
		CarryOver: []CarryOverRule{{Series: "csv1", Paths: []string{"src/io/"}, Justification: "IO unchanged", Scenarios: []string{"csv1-01"}, Holds: true, Why: "none of src/io/ changed",
			Diffs: []GateDiff{{Base: "c0c0", Head: "c1c1", Command: "git diff --no-renames --stat=200,160 c0c0 c1c1", Stat: diff}}}},
		Scenarios: []GateScenario{
			{ID: "p2-16-01", Series: "p2-16", Required: true},
			{ID: "csv1-01", Series: "csv1", Status: StatusCarriedOver, Why: "carried over", CarriedOver: &CarriedOver{Archive: "/arch/a", Commit: "c0c0", Target: "sandbox",
				Record: "scenarios/csv1-01.json", SHA256: "5a5a", Series: "csv1", Justification: "IO unchanged", DiffCommand: "git diff …", DiffStat: diff, Passed: time.Now()}},
		}}
	a.SetGate(g)
	require.NoError(t, a.WriteScenario(sampleScenario("p2-16-01", StatusFailed)))
	require.NoError(t, a.Finish(&Run{Target: "sandbox", Label: "gate-r2", End: time.Now()}))

	assert.Equal(t, GateFail, g.Verdict)
	assert.NotEmpty(t, g.Archive)
	requireValid(t, a.Dir()) // gate.json and run.json included
	runDoc := loadJSON(t, filepath.Join(a.Dir(), "run.json"))
	assert.Equal(t, map[string]any{"name": "r2", "verdict": "FAIL", "file": "gate.json"}, runDoc["gate"])

	readme, err := os.ReadFile(filepath.Join(a.Dir(), "README.md"))
	require.NoError(t, err)
	for _, want := range []string{"## Release gate r2: **FAIL**", "| p2-16-01 | yes | **failed** |", "carried over", "sha256 5a5a (commit c0c0)", "src/cli/index.ts | 2 +-", "IO unchanged"} {
		assert.Contains(t, string(readme), want)
	}
	page, err := os.ReadFile(filepath.Join(a.Dir(), IndexFile))
	require.NoError(t, err)
	assert.Contains(t, string(page), "Release gate r2: FAIL")
	// The page's text as a browser shows it: the template escaper writes '+' as "&#43;".
	assert.Contains(t, html.UnescapeString(string(page)), "src/cli/index.ts | 2 +-")

	back, err := ReadGate(a.Dir())
	require.NoError(t, err)
	assert.Equal(t, GateFail, back.Verdict)
	none, err := ReadGate(t.TempDir())
	require.NoError(t, err)
	assert.Nil(t, none)
}

// Blocked and interrupted are their own statuses in README, junit.xml and cucumber.json:
// never counted as failed, never as passed.
func TestBlockedAndInterruptedReports(t *testing.T) {
	a, err := Create(t.TempDir(), "x", time.Now(), testRedactor())
	require.NoError(t, err)
	b := sampleScenario("p2-11-01", StatusBlocked)
	b.Reason = "blocked: a pending REQUESTED request is in the request app"
	b.Steps[1].Error = "blocked: a pending REQUESTED request is in the request app"
	i := sampleScenario("p2-16-02", StatusInterrupted)
	i.Reason = "interrupted: context canceled"
	require.NoError(t, a.WriteScenario(b))
	require.NoError(t, a.WriteScenario(i))
	require.NoError(t, a.WriteScenario(sampleScenario("p2-16-01", StatusPassed)))
	require.NoError(t, a.Finish(&Run{Target: "sandbox", End: time.Now()}))

	var run Run
	data, err := os.ReadFile(filepath.Join(a.Dir(), "run.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &run))
	assert.Equal(t, Totals{Total: 3, Passed: 1, Blocked: 1, Interrupted: 1, DurationMS: run.Totals.DurationMS}, run.Totals)

	readme, err := os.ReadFile(filepath.Join(a.Dir(), "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "1 passed, 0 failed, 1 blocked, 1 interrupted, 0 not run, of 3")
	assert.Contains(t, string(readme), "| p2-11-01 | 2 | **blocked** |")
	assert.Contains(t, string(readme), "| p2-16-02 | 2 | **interrupted** |")
	assert.NotContains(t, string(readme), "## Failures")
	assert.Contains(t, string(readme), "### p2-11-01 (blocked)")

	var suites struct {
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Cases []struct {
				Name  string `xml:"name,attr"`
				Error *struct {
					Type    string `xml:"type,attr"`
					Message string `xml:"message,attr"`
				} `xml:"error"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	jx, err := os.ReadFile(filepath.Join(a.Dir(), "junit.xml"))
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal(jx, &suites))
	assert.Equal(t, 0, suites.Failures)
	assert.Equal(t, 2, suites.Errors)
	types := map[string]string{}
	for _, s := range suites.Suites {
		for _, c := range s.Cases {
			assert.Nil(t, c.Failure, c.Name)
			if c.Error != nil {
				types[strings.SplitN(c.Name, ":", 2)[0]] = c.Error.Type
				assert.NotContains(t, c.Error.Message, "blocked: blocked:")
			}
		}
	}
	assert.Equal(t, map[string]string{"p2-11-01": "blocked", "p2-16-02": "interrupted"}, types)

	cj, err := os.ReadFile(filepath.Join(a.Dir(), "cucumber.json"))
	require.NoError(t, err)
	var feats []render.CucumberFeature
	require.NoError(t, json.Unmarshal(cj, &feats))
	seen := map[string]bool{}
	for _, f := range feats {
		for _, el := range f.Elements {
			for _, st := range el.Steps {
				if strings.Contains(el.Desc, "blocked") || strings.Contains(el.Desc, "interrupted") {
					assert.NotEqual(t, "failed", st.Result.Status, "%s: %s", el.Desc, st.Name)
				}
			}
			if len(el.After) > 0 {
				seen[el.After[0].Result.Status+" "+strings.SplitN(el.After[0].Result.Error, ":", 2)[0]] = true
			}
		}
	}
	assert.Equal(t, map[string]bool{"skipped blocked": true, "skipped interrupted": true}, seen)
}

// --rerun picks up what did not pass: failed, blocked and interrupted.
func TestFailedScenariosIncludesBlockedAndInterrupted(t *testing.T) {
	a, err := Create(t.TempDir(), "x", time.Now(), testRedactor())
	require.NoError(t, err)
	a.SetOrder([]string{"a", "b", "c", "d", "e"}) // the rows follow run_order, as a run's do
	for id, st := range map[string]string{"a": StatusFailed, "b": StatusBlocked, "c": StatusInterrupted, "d": StatusPassed, "e": StatusNotRun} {
		s := sampleScenario(id, st)
		require.NoError(t, a.WriteScenario(s))
	}
	require.NoError(t, a.Finish(&Run{RunOrder: []string{"a", "b", "c", "d", "e"}}))
	ids, err := FailedScenarios(a.Dir())
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, ids)
}
