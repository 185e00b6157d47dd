package results

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results/render"
)

const (
	testToken  = "Zm9vYmFyLXRva2VuLTAxMjM0NTY3ODk"
	testSecret = "p@ss word/with+chars"
)

func testRedactor() *redact.Redactor {
	return redact.New(map[string]string{"KSQL_FLOWNET_STATE_API_TOKEN": testToken, "KSQL_DB_PASSWORD": testSecret},
		map[string]string{"4257": "state", "4258": "audit", "4260": "request", "4264": "log"})
}

func intp(i int) *int { return &i }

func sampleScenario(id, status string) *Scenario {
	start := time.Date(2026, 11, 29, 10, 11, 29, 0, time.UTC)
	return &Scenario{
		ID: id, Name: "cancel and claim race", Feature: "P2-16 requests", FeatureFile: "features/p2-16/" + id + ".feature", Line: 3,
		Series: "p2-16", Tags: []string{"@" + id, "@p2-16", "@acc-2"}, Status: status,
		Start: start, End: start.Add(1500 * time.Millisecond),
		Steps: []Step{
			{Keyword: "Given ", Text: "a FAILED run of network-midfail", Status: "passed", DurationMS: 800},
			{Keyword: "Then ", Text: "exactly one NETWORK_RUN exists", Status: map[bool]string{true: "passed", false: "failed"}[status == StatusPassed],
				Error: "GET /k/v1/records.json?app=4257 with token " + testToken + " returned 2 records", DurationMS: 700},
		},
		Assertions: []Assertion{{What: "NETWORK_RUN count in app=4257", Expected: "1", Seen: "2", OK: status == StatusPassed}},
		Processes: []Process{{
			Name: "flownet run-network", Argv: []string{"node", "dist/cli/index.js", "run-network", "--app", "4257", "--api-token", testToken},
			ExitCode: intp(1), DurationMS: 1200,
			StdoutTail: `{"app":4257,"records":[{"reason":{"type":"MULTI_LINE_TEXT","value":"KSQL_FLOW_TEST_1:stop"}}]}`,
			StderrTail: "Authorization: Basic " + b64("operator:"+testSecret) + "\nkintone error at /k/4258/show\n" + strings.Repeat("z", 10000),
		}},
		Barriers: []BarrierArrival{{ID: "b1", Phase: "before", Method: "PUT", Path: "/k/v1/record.json", Status: 200, At: start}},
		Traffic:  map[string]int{"PUT /k/v1/record.json": 3, "GET /k/v1/records.json": 7},
		Cleanup:  Cleanup{OK: true, Actions: []string{"deleted 3 records from app 4257"}},
	}
}

func TestCreateLayoutAndLabel(t *testing.T) {
	out := t.TempDir()
	now := time.Date(2026, 11, 29, 10, 11, 29, 0, time.UTC)
	a, err := Create(out, "@p2-16 and not @slow", now, testRedactor())
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(out, "2026-11-29", "101129-p2-16-and-not-slow"), a.Dir())
	b, err := Create(out, "@p2-16 and not @slow", now, testRedactor())
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(out, "2026-11-29", "101129-p2-16-and-not-slow-2"), b.Dir())
	c, err := Create(out, "", now, testRedactor())
	require.NoError(t, err)
	assert.Equal(t, "101129-all", filepath.Base(c.Dir()))
	// A provisional run.json says "interrupted" until Finish.
	_, run, err := ReadArchive(a.Dir())
	require.NoError(t, err)
	assert.Equal(t, RunInterrupted, run.State)

	assert.Equal(t, "a-b_c.d", SanitizeLabel("../a/b_c.d"))
	assert.Equal(t, "all", SanitizeLabel("@@ ()"))
	assert.LessOrEqual(t, len(SanitizeLabel(strings.Repeat("x", 200))), 60)

	_, err = Create(out, "x", now, nil)
	assert.Error(t, err)
}

func TestWriteScenarioRedactsAndWritesAtOnce(t *testing.T) {
	a, err := Create(t.TempDir(), "all", time.Now(), testRedactor())
	require.NoError(t, err)
	s := sampleScenario("p2-16-02", StatusFailed)
	before, _ := json.Marshal(s)
	require.NoError(t, a.WriteScenario(s))
	after, _ := json.Marshal(s)
	assert.Equal(t, string(before), string(after), "the caller's scenario is not modified")

	data, err := os.ReadFile(filepath.Join(a.Dir(), "scenarios", "p2-16-02.json"))
	require.NoError(t, err, "written as soon as WriteScenario returns")
	var got Scenario
	require.NoError(t, json.Unmarshal(data, &got), string(data))
	assert.Equal(t, SchemaVersion, got.SchemaVersion)
	assert.Equal(t, int64(1500), got.DurationMS, "duration filled from start/end")
	for _, leak := range []string{testToken, "4257", "4258", "KSQL_FLOW_TEST_1:stop", b64("operator:" + testSecret)} {
		assertAbsent(t, string(data), leak)
	}
	assert.Equal(t, []string{"node", "dist/cli/index.js", "run-network", "--app", "app:state", "--api-token", "[REDACTED:KSQL_FLOWNET_STATE_API_TOKEN]"}, got.Processes[0].Argv)
	assert.LessOrEqual(t, len(got.Processes[0].StderrTail), TailLimit)
	assert.Contains(t, got.Steps[1].Error, "app=app:state")
	assert.Equal(t, 7, got.Traffic["GET /k/v1/records.json"])
	// The stdout tail held JSON: it is still there, redacted.
	assert.Contains(t, got.Processes[0].StdoutTail, `"app":"app:state"`)
	assert.Contains(t, got.Processes[0].StdoutTail, "[REDACTED:REASON")

	// Same id again: a second file, not an overwrite.
	require.NoError(t, a.WriteScenario(sampleScenario("p2-16-02", StatusPassed)))
	assert.FileExists(t, filepath.Join(a.Dir(), "scenarios", "p2-16-02-2.json"))
	assertNoTempFiles(t, a.Dir())
}

// assertAbsent reports a leak with a little context instead of dumping a whole file.
func assertAbsent(t *testing.T, hay, needle string) {
	t.Helper()
	if i := strings.Index(hay, needle); i >= 0 {
		lo, hi := max(0, i-60), min(len(hay), i+len(needle)+60)
		t.Errorf("found %q at %d: …%s…", needle, i, hay[lo:hi])
	}
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		assert.False(t, strings.HasPrefix(d.Name(), TempPrefix), "leftover temp file %s", p)
		return nil
	})
}

func TestFinishWritesRecordsAndVerifyPasses(t *testing.T) {
	red := testRedactor()
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	a, err := Create(t.TempDir(), "@p2-16", start, red)
	require.NoError(t, err)
	require.NoError(t, a.WriteScenario(sampleScenario("p2-16-01", StatusPassed)))
	require.NoError(t, a.WriteScenario(sampleScenario("p2-16-02", StatusFailed)))
	sums := a.Summaries()
	sums = append(sums,
		ScenarioSummary{ID: "p2-16-03", Feature: "P2-16 requests", Series: "p2-16", Status: StatusNotRun, NotRunCategory: NotRunPlatform, Reason: "@windows on linux"},
		ScenarioSummary{ID: "m5-01", Feature: "M5", Series: "m5", Status: StatusNotRun, NotRunCategory: NotRunTag, Reason: "not selected by @p2-16"})
	run := &Run{
		RunnerVersion: "0.1.0", Target: "live", Profile: "e2e", OS: "linux/amd64", TagExpression: "@p2-16",
		SUT:         SUTIdentity{Commit: "abc1234", CommitSource: "flag", Versions: map[string]string{"ksql-flownet": "1.4.0", "ksql-flow": "2.0.1"}},
		Environment: map[string]string{"base_url": "https://example.cybozu.com", "state app": "app=4257", "KSQL_FLOWNET_AUDIT_APP_ID": "4258", "KSQL_FLOWNET_STATE_API_TOKEN": "set"},
		RunOrder:    []string{"p2-16-01", "p2-16-02", "p2-16-03"}, Scenarios: sums,
		Start: start, End: start.Add(5 * time.Minute),
		Evidence: []EvidenceRow{{Criterion: "acc-2: one claim wins | race", Environment: "live e2e", Result: "failed", Limits: "one run", Scenarios: []string{"p2-16-02"}}},
	}
	require.NoError(t, a.Finish(run))

	for _, f := range []string{"run.json", "README.md", "cucumber.json", "junit.xml"} {
		assert.FileExists(t, filepath.Join(a.Dir(), f))
	}
	var gotRun Run
	data, _ := os.ReadFile(filepath.Join(a.Dir(), "run.json"))
	require.NoError(t, json.Unmarshal(data, &gotRun), string(data))
	assert.Equal(t, RunComplete, gotRun.State)
	assert.Equal(t, Totals{Total: 4, Passed: 1, Failed: 1, NotRun: 2, NotSelected: 1, DurationMS: 3000}, gotRun.Totals)
	assert.Equal(t, "[REDACTED:KSQL_FLOWNET_STATE_API_TOKEN]", gotRun.Environment["KSQL_FLOWNET_STATE_API_TOKEN"])
	assert.Equal(t, "app=app:state", gotRun.Environment["state app"])
	assert.Equal(t, "app:audit", gotRun.Environment["KSQL_FLOWNET_AUDIT_APP_ID"])

	readme, _ := os.ReadFile(filepath.Join(a.Dir(), "README.md"))
	for _, want := range []string{"# Acceptance record: p2-16", "| SUT commit | abc1234 (flag) |", "| Version: ksql-flownet | 1.4.0 |",
		"1. p2-16-01", "| p2-16-02 | 2 | **failed** | 1.5 s | [`scenarios/p2-16-02.json`](scenarios/p2-16-02.json) |", "## Failures",
		"| p2-16-03 | other platform | @windows on linux |", "| KSQL_FLOWNET_AUDIT_APP_ID | app:audit |", `acc-2: one claim wins \| race`,
		"- Result: 1 passed, 1 failed, 1 not run, 1 not selected, of 4", "\n1 not selected (1 not selected by @p2-16); not listed, run.json keeps their rows.\n"} {
		assert.Contains(t, string(readme), want)
	}
	// The scenario the tag expression left out is counted, never listed.
	assert.NotContains(t, string(readme), "m5-01")

	var cuke []render.CucumberFeature
	data, _ = os.ReadFile(filepath.Join(a.Dir(), "cucumber.json"))
	require.NoError(t, json.Unmarshal(data, &cuke), string(data))
	require.Len(t, cuke, 2, "one feature per feature file")
	assert.Equal(t, "failed", cuke[1].Elements[0].Steps[1].Result.Status)
	assert.Equal(t, int64(700*time.Millisecond), cuke[1].Elements[0].Steps[1].Result.Duration)

	var ju render.JUnitSuites
	data, _ = os.ReadFile(filepath.Join(a.Dir(), "junit.xml"))
	require.NoError(t, xml.Unmarshal(data, &ju), string(data))
	assert.Equal(t, 3, ju.Tests, "two run + the platform skip; tag-filtered ones are not test cases")
	assert.Equal(t, 1, ju.Failures)
	assert.Equal(t, 1, ju.Skipped)

	leaks, err := redact.Verify(a.Dir(), redact.SecretsFromEnv(map[string]string{"KSQL_FLOWNET_STATE_API_TOKEN": testToken, "KSQL_DB_PASSWORD": testSecret}),
		[]string{"4257", "4258", "4260", "4264"})
	require.NoError(t, err)
	assert.Empty(t, leaks)
	assertNoTempFiles(t, a.Dir())

	// Its not-run rows name no record (a run writes one for each): --rerun will not read it.
	_, err = FailedScenarios(a.Dir())
	assert.ErrorContains(t, err, "run.json: scenario row 3 (p2-16-03) names no record file")
}

func TestWriteFile(t *testing.T) {
	a, err := Create(t.TempDir(), "all", time.Now(), testRedactor())
	require.NoError(t, err)
	require.NoError(t, a.WriteFile("logs/traffic.log", []byte("GET /k/v1/records.json?app=4257 token="+testToken)))
	data, err := os.ReadFile(filepath.Join(a.Dir(), "logs", "traffic.log"))
	require.NoError(t, err)
	assert.Equal(t, "GET /k/v1/records.json?app=app:state token=[REDACTED:KSQL_FLOWNET_STATE_API_TOKEN]", string(data))
	require.NoError(t, a.WriteFile("extra.json", []byte(`{"app":4257}`)))
	data, _ = os.ReadFile(filepath.Join(a.Dir(), "extra.json"))
	assert.JSONEq(t, `{"app":"app:state"}`, string(data))
	for _, bad := range []string{"../escape", "/abs", "a/../../b", "."} {
		assert.Error(t, a.WriteFile(bad, []byte("x")), bad)
	}
}

func TestFailedScenariosErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := FailedScenarios(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not a flowtest archive")
	_, err = FailedScenarios(filepath.Join(dir, "missing"))
	assert.Error(t, err)

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scenarios"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scenarios", "x.json"), []byte(`{"schema_version":99,"id":"x","status":"failed"}`), 0o644))
	_, err = FailedScenarios(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "schema_version 99")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "scenarios", "x.json"), []byte(`{"id":`), 0o644))
	_, err = FailedScenarios(dir)
	assert.Error(t, err)
}

func TestFailedScenariosRunOrder(t *testing.T) {
	a, err := Create(t.TempDir(), "all", time.Now(), testRedactor())
	require.NoError(t, err)
	for _, id := range []string{"m3-01", "m5-02", "m4-01"} {
		require.NoError(t, a.WriteScenario(sampleScenario(id, StatusFailed)))
	}
	require.NoError(t, a.WriteScenario(sampleScenario("m4-02", StatusPassed)))
	require.NoError(t, a.UpdateRun(&Run{RunOrder: []string{"m3-01", "m4-01", "m4-02", "m5-02"}, State: RunInterrupted}))
	ids, err := FailedScenarios(a.Dir())
	require.NoError(t, err)
	assert.Equal(t, []string{"m3-01", "m4-01", "m5-02"}, ids)
}

// The crash test: a helper process (this test binary re-executed) writes two scenarios,
// reports its archive folder, then blocks as a scenario in flight would. It is killed; the
// two files must be complete, valid JSON, and the archive readable for --rerun.
const crashHelperEnv = "FLOWTEST_RESULTS_CRASH_HELPER"

func TestCrashHelper(t *testing.T) {
	out := os.Getenv(crashHelperEnv)
	if out == "" {
		t.Skip("helper process for TestKilledRunKeepsCompletedScenarios")
	}
	a, err := Create(out, "crash", time.Now(), testRedactor())
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(3)
	}
	for _, s := range []*Scenario{sampleScenario("m5-01", StatusPassed), sampleScenario("m5-02", StatusFailed)} {
		if err := a.WriteScenario(s); err != nil {
			fmt.Println("ERROR", err)
			os.Exit(3)
		}
	}
	fmt.Println("READY", a.Dir())
	select {} // the third scenario "runs" until the process is killed
}

func TestKilledRunKeepsCompletedScenarios(t *testing.T) {
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+out)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	var dir string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		require.False(t, strings.HasPrefix(line, "ERROR"), line)
		if d, ok := strings.CutPrefix(line, "READY "); ok {
			dir = d
			break
		}
	}
	require.NotEmpty(t, dir, "helper never reported READY (scan error: %v)", sc.Err())
	require.NoError(t, cmd.Process.Kill())
	err = cmd.Wait()
	require.Error(t, err, "the helper was killed, not finished")

	for _, id := range []string{"m5-01", "m5-02"} {
		data, err := os.ReadFile(filepath.Join(dir, "scenarios", id+".json"))
		require.NoError(t, err)
		var s Scenario
		require.NoError(t, json.Unmarshal(data, &s), "%s is valid JSON", id)
		assert.Equal(t, id, s.ID)
		assert.Len(t, s.Steps, 2)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "scenarios"))
	require.NoError(t, err)
	assert.Len(t, entries, 2, "nothing of the scenario in flight")
	scen, run, err := ReadArchive(dir)
	require.NoError(t, err)
	assert.Len(t, scen, 2)
	assert.Equal(t, RunInterrupted, run.State, "the provisional run.json says interrupted")
	ids, err := FailedScenarios(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"m5-02"}, ids)
	leaks, err := redact.Verify(dir, map[string]string{"T": testToken, "P": testSecret}, []string{"4257", "4258"})
	require.NoError(t, err)
	assert.Empty(t, leaks)
}

func TestConcurrentWritesAndAddSecret(t *testing.T) {
	a, err := Create(t.TempDir(), "all", time.Now(), testRedactor())
	require.NoError(t, err)
	done := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func(i int) {
			a.Redactor().AddSecret(fmt.Sprintf("RUNTIME_%d_TOKEN", i), fmt.Sprintf("runtime-secret-%d-xyz", i))
			s := sampleScenario(fmt.Sprintf("c-%d", i%4), StatusPassed)
			s.Steps[0].Error = fmt.Sprintf("saw runtime-secret-%d-xyz", i)
			done <- a.WriteScenario(s)
		}(i)
	}
	for i := 0; i < 8; i++ {
		require.NoError(t, <-done)
	}
	scen, _, err := ReadArchive(a.Dir())
	require.NoError(t, err)
	assert.Len(t, scen, 8, "same ids got distinct files")
	for _, s := range scen {
		assert.NotContains(t, s.Steps[0].Error, "runtime-secret-")
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// finishedArchive writes a small real archive (two scenarios, reports, index.html).
func finishedArchive(t *testing.T) string {
	t.Helper()
	a, err := Create(t.TempDir(), "p2-16", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), testRedactor())
	require.NoError(t, err)
	require.NoError(t, a.WriteScenario(sampleScenario("p2-16-01", StatusPassed)))
	require.NoError(t, a.WriteScenario(sampleScenario("p2-16-02", StatusFailed)))
	require.NoError(t, a.Finish(&Run{Target: "sandbox", End: time.Now(), RunOrder: []string{"p2-16-01", "p2-16-02"}}))
	return a.Dir()
}
