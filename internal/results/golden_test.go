package results

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goldenArchive writes a fixed archive through Create, WriteScenario and Finish: every status,
// a failure with its assertion and step, a cleanup failure, secrets and app ids to redact,
// timelines, evidence rows, the environment table and, with gate, a gate record with a
// carried-over scenario and a rule that held on a diff. Nothing in it depends on the clock or
// the machine, so its files can be compared byte for byte.
func goldenArchive(t *testing.T, gate bool) string {
	t.Helper()
	start := time.Date(2026, 11, 29, 10, 11, 29, 0, time.UTC)
	label := "p2-16"
	if gate {
		label = "gate-r2"
	}
	a, err := Create(t.TempDir(), label, start, testRedactor())
	require.NoError(t, err)
	passed := timedScenario("p2-16-01", StatusPassed)
	setup := int64(120)
	passed.SetupMS = &setup
	for i := range passed.Steps { // where each step is written and which definition ran it
		passed.Steps[i].Line = 4 + i
		passed.Steps[i].Match = &StepMatch{Location: fmt.Sprintf("internal/steps/kit/runs.go:%d", 40+i), Pattern: "^step " + strconv.Itoa(i) + "$"}
	}
	passed.APIRequests = APIRequests{"state": {Requests: 12, ByMethod: map[string]int64{"GET": 9, "PUT": 3}, ByOrigin: map[string]int64{"harness": 5, "flownet": 7}}, "log": {Requests: 2, ByMethod: map[string]int64{"GET": 2}}}
	failed := timedScenario("p2-16-02", StatusFailed)
	failed.Reason = "step failed"
	failed.Cleanup = Cleanup{OK: false, Error: "delete app=4257 records: 502 | retry"}
	failed.APIRequests = APIRequests{"state": {Requests: 30, ByMethod: map[string]int64{"GET": 20, "POST": 6, "DELETE": 4}, Throttled: 2}}
	blocked := sampleScenario("p2-11-01", StatusBlocked)
	blocked.Reason = "blocked: a pending REQUESTED request is in the request app"
	blocked.Steps[1].Error = blocked.Reason
	interrupted := sampleScenario("p2-16-03", StatusInterrupted)
	interrupted.Reason = "interrupted: context canceled"
	failedOutside := sampleScenario("p2-16-04", StatusFailed)
	failedOutside.Steps[1].Status = "passed"
	failedOutside.Reason = "After hook: leftover process\nsecond line"
	if gate {
		diff := " src/cli/index.ts | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n```\n"
		a.SetGate(&GateRecord{Gate: "r2", Title: "v1.0.0 gate", Definition: "features/gates/r2.yaml", DefinitionSHA256: "00ff", Required: "@p2-16",
			SUT: GateSUT{Commit: "c1c1", Given: "c1", Head: "d2d2"}, Since: &GateSince{Archive: "/arch/a", Commit: "c0c0", Target: "sandbox"},
			CarryOver: []CarryOverRule{
				{Series: "csv1", Paths: []string{"src/io/"}, Justification: "IO unchanged", Scenarios: []string{"csv1-01"}, Holds: true, Why: "none of src/io/ changed",
					Diffs: []GateDiff{{Base: "c0c0", Head: "c1c1", Command: "git diff --no-renames --stat=200,160 c0c0 c1c1", Stat: diff}, {Base: "c0c1", Head: "c1c1", Command: "git diff c0c1 c1c1"}}},
				{Series: "m5", Paths: []string{"src/run/"}, Justification: "runs unchanged", Holds: false, Why: "the diff touches src/run/a.ts"},
			},
			Scenarios: []GateScenario{
				{ID: "p2-16-01", Series: "p2-16", Required: true}, {ID: "p2-16-02", Series: "p2-16", Required: true},
				{ID: "p2-11-01", Series: "p2-11", Required: true}, {ID: "p2-16-09", Series: "p2-16", Required: true},
				{ID: "csv1-01", Series: "csv1", Status: StatusCarriedOver, Why: "carried over", CarriedOver: &CarriedOver{Archive: "/arch/a", Commit: "c0c0", Target: "sandbox",
					Record: "scenarios/csv1-01.json", SHA256: "5a5a", Series: "csv1", Justification: "IO unchanged", DiffCommand: "git diff …", DiffStat: diff, Passed: start}},
			}})
	}
	for _, s := range []*Scenario{passed, failed, blocked, interrupted, failedOutside} {
		require.NoError(t, a.WriteScenario(s))
	}
	a.SetOrder([]string{"p2-11-01", "p2-16-01", "p2-16-02", "p2-16-03", "p2-16-04"})
	sums := append(a.Summaries(),
		ScenarioSummary{ID: "p2-16-09", Feature: "P2-16 requests", Series: "p2-16", Tags: []string{"@p2-16-09"}, Status: StatusNotRun, NotRunCategory: NotRunTag, Reason: "not selected by @p2-16 and not @slow"},
		ScenarioSummary{ID: "w1-01", Feature: "Windows", Series: "w1", Tags: []string{"@w1-01", "@windows"}, Status: StatusNotRun, NotRunCategory: NotRunPlatform, Reason: "needs windows | runs on linux"},
		ScenarioSummary{ID: "m9-01", Feature: "M9", Series: "m9", Tags: []string{"@m9-01"}, Status: StatusNotRun, NotRunCategory: NotRunNotImplemented})
	exit := 1
	run := &Run{RunnerVersion: "v0.0.0-test", Flowtest: &FlowtestBuild{Version: "v0.0.0-test", Commit: "f1f1f1", Modified: true},
		FeaturesDigest: "sha256:" + strings.Repeat("0f", 32), Target: "sandbox", Profile: "default", OS: "linux/amd64", TagExpression: "@p2-16 or @p2-11",
		SUT:         SUTIdentity{Commit: "c1c1", CommitSource: "flag", Branch: "main", Dirty: true, Versions: map[string]string{"flownet": "1.2.3", "ksql-flow": "0.9.0"}},
		Environment: map[string]string{"base_url": "http://127.0.0.1:4000", "apps": "state, audit, request, log"},
		RunOrder:    []string{"p2-11-01", "p2-16-01", "p2-16-02", "p2-16-03", "p2-16-04"},
		Scenarios:   sums, End: start.Add(42 * time.Second), ExitCode: &exit,
		Command: []string{"flowtest", "run", "--tags", "@p2-16 or @p2-11", "--api-token", testToken},
		APIRequests: APIRequests{"state": {Requests: 45, ByMethod: map[string]int64{"GET": 32, "POST": 6, "PUT": 3, "DELETE": 4}, ByOrigin: map[string]int64{"ksql-flow": 1, "flownet": 20, "harness": 24}, Throttled: 2},
			"log": {Requests: 2, ByMethod: map[string]int64{"GET": 2}}, "other": {Requests: 1, ByMethod: map[string]int64{"GET": 1}}},
		APIBudget: &APIBudget{PerApp: 5000, Basis: "2026-11-28/101010-p2-16", Estimate: map[string]int64{"state": 44, "log": 2}},
		Evidence: []EvidenceRow{
			{Criterion: "acc-2 | claims", Environment: "sandbox", Result: "fail", Limits: "emulated latency\nonly", Scenarios: []string{"p2-16-01", "p2-16-02"}},
			{Criterion: "acc-3", Environment: "sandbox", Result: "not run"},
		},
	}
	require.NoError(t, a.Finish(run))
	return a.Dir()
}

// gateVolatile are the gate record's fields that name the temp folder and the clock.
var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata")

var gateVolatile = regexp.MustCompile(`"(archive|decided)": "[^"]*"`)

// Every file of a fixed archive against its golden copy: what a run writes (run.json, the
// scenario records, README.md, summary.md, index.html, cucumber.json, junit.xml, gate.json) must not
// change when the code that writes it is reorganised. Rewrite with -update after a change
// that is meant, and read the diff.
func TestArchiveFilesAreGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		gate bool
	}{{"run", false}, {"gate-run", true}} {
		t.Run(c.name, func(t *testing.T) {
			dir := goldenArchive(t, c.gate)
			names := []string{"run.json", "README.md", SummaryFile, IndexFile, "cucumber.json", "junit.xml"}
			if c.gate {
				names = append(names, GateFile)
			}
			for _, id := range []string{"p2-11-01", "p2-16-01", "p2-16-02", "p2-16-03", "p2-16-04"} {
				names = append(names, ScenarioDir+"/"+id+".json")
			}
			for _, name := range names {
				got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
				require.NoError(t, err)
				if name == GateFile {
					got = gateVolatile.ReplaceAll(got, []byte(`"$1": "(volatile)"`))
				}
				golden := filepath.Join("testdata", "golden", c.name, filepath.FromSlash(name)+".golden")
				if *updateGolden {
					require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
					require.NoError(t, os.WriteFile(golden, got, 0o644))
				}
				want, err := os.ReadFile(golden)
				require.NoError(t, err, "no golden file: go test ./results -run TestArchiveFilesAreGolden -update")
				if !bytes.Equal(want, got) {
					assert.Equal(t, string(want), string(got), "%s changed: look at the diff, then rewrite the goldens with -update", name)
				}
			}
		})
	}
}
