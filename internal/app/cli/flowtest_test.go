package cli

// End-to-end tests of the flowtest binary: the real runner, the real sandbox binary, the
// real feature files. The acceptance scenarios on the sandbox are part of the test suite.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/app/buildtest"
)

var binDir string

func TestMain(m *testing.M) {
	if fakeChildMain() { // started as a fake child by a refusal test: leave a mark, exit
		os.Exit(1)
	}
	os.Exit(buildtest.RunWith(func() int {
		code := m.Run()
		for _, c := range cleanups {
			c()
		}
		return code
	}, &binDir, "flowtest", "flowsandbox"))
}

func exe() string { return buildtest.Exe() }

func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", "..", ".."))
}

type result struct {
	code           int
	stdout, stderr string
}

// flowtest runs the built binary from the repository root with a clean environment (no
// operator settings leak in) plus env.
// flowtestCmd is the built flowtest with args, run in the repository root with env only.
func flowtestCmd(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(binDir, "flowtest"+exe()), args...)
	cmd.Dir = repoRoot()
	cmd.Env = env
	return cmd
}

// baseEnv is the least environment a flowtest child runs with: PATH, HOME and tmp as TMPDIR.
func baseEnv(tmp string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + tmp}
}

func flowtest(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := flowtestCmd(append(baseEnv(os.TempDir()), env...), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run flowtest: %v", err)
	}
	return result{code, out.String(), errb.String()}
}

func archiveDir(t *testing.T, stdout string) string {
	t.Helper()
	for _, line := range strings.Split(stdout, "\n") {
		if i := strings.Index(line, "archive "); i >= 0 && strings.HasPrefix(line, "flowtest ") {
			return strings.TrimSpace(line[i+len("archive "):])
		}
	}
	t.Fatalf("no archive line in output:\n%s", stdout)
	return ""
}

// fullRun is one full run of the manifest on the sandbox, shared by the tests that judge it.
type fullRun struct {
	once sync.Once
	r    result
	dir  string
}

// acceptance is the full run on the reference FlowNet: TestAcceptanceSuiteOnSandbox judges
// it, and the fast planted defects take their control from its archive (they break the
// reference) instead of running the same scenarios again. realAcceptance is the full run on
// the pinned real FlowNet (TestAcceptanceSuiteOnRealProduct); the differential check
// compares the two.
var acceptance, realAcceptance fullRun

func acceptanceRun(t *testing.T) (result, string) {
	t.Helper()
	return acceptance.get(t, "reference")
}

func realAcceptanceRun(t *testing.T) (result, string) {
	t.Helper()
	return realAcceptance.get(t, "real")
}

func (f *fullRun) get(t *testing.T, product string) (result, string) {
	t.Helper()
	f.once.Do(func() {
		out, err := os.MkdirTemp("", "flowtest-acceptance-"+product+"-")
		if err != nil {
			t.Fatal(err)
		}
		f.r = flowtest(t, nil, "run", "--product", product, "--out", out)
		for _, line := range strings.Split(f.r.stdout, "\n") {
			if i := strings.Index(line, "archive "); i >= 0 && strings.HasPrefix(line, "flowtest ") {
				f.dir = strings.TrimSpace(line[i+len("archive "):])
			}
		}
		if f.dir != "" && !filepath.IsAbs(f.dir) {
			f.dir = filepath.Join(repoRoot(), f.dir)
		}
		cleanups = append(cleanups, func() { os.RemoveAll(out) })
	})
	if f.dir == "" {
		t.Fatalf("the %s acceptance run made no archive (exit %d):\n%s\n%s", product, f.r.code, f.r.stdout, f.r.stderr)
	}
	return f.r, f.dir
}

// cleanups run after every test of the package (TestMain): what tests share outlives each.
var cleanups []func()

// The main job: the whole manifest on the sandbox. Implemented scenarios pass, the others
// are reported as not implemented, never as passed; the archive verifies clean.
func TestAcceptanceSuiteOnSandbox(t *testing.T) {
	t.Parallel() // a long end-to-end run that mostly waits: the others of its kind run beside it
	if testing.Short() {
		t.Skip("acceptance run skipped in -short mode")
	}
	r, dir := acceptanceRun(t)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	var run struct {
		State     string `json:"state"`
		RunOrder  []string
		Scenarios []struct {
			ID, Status, NotRunCategory string
		} `json:"scenarios"`
	}
	require.NoError(t, json.Unmarshal(data, &run))
	assert.Equal(t, "complete", run.State)
	passed := map[string]bool{}
	for _, s := range run.Scenarios {
		switch s.Status {
		case "passed":
			passed[s.ID] = true
		case "not-run":
		default:
			t.Errorf("scenario %s: %s", s.ID, s.Status)
		}
	}
	for _, id := range []string{"m5-serial-success", "m5-mid-failure", "m5-resume", "m5-lock-conflict", "m5-kill-unknown", "m6-01-resume-identity", "m6-02-unknown-isolation"} {
		assert.True(t, passed[id], "%s passed", id)
	}
	assert.Len(t, run.Scenarios, manifestSize(t))
	assert.Contains(t, r.stdout, "archive verify: no secret or raw app id")

	// Every sender is counted, and said to be, in a scenario without a held window too: the
	// harness's reads, FlowNet's through its counting proxy, its kSQL-Flow children's through the
	// scenario's kSQL-Flow proxy (n1_extract reads 顧客管理).
	var serial struct {
		APIRequests map[string]struct {
			ByOrigin map[string]int64 `json:"by_origin"`
		} `json:"api_requests"`
	}
	data, err = os.ReadFile(filepath.Join(dir, "scenarios", "m5-serial-success.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &serial))
	assert.Positive(t, serial.APIRequests["state"].ByOrigin["harness"], "the harness's reads of the state app")
	assert.Positive(t, serial.APIRequests["state"].ByOrigin["flownet"], "FlowNet's writes of the state app")
	assert.Positive(t, serial.APIRequests["customers"].ByOrigin["ksql-flow"], "kSQL-Flow's reads of the customers app")

	v := flowtest(t, nil, "archive", "verify", dir)
	assert.Equal(t, 0, v.code, v.stdout+v.stderr)
	assert.Contains(t, v.stdout, "matches its schema")
	requireSchemaValid(t, dir) // every record of a full run
}

// The main job as `make run` runs it where Node.js is: the whole manifest on the pinned real
// kSQL-FlowNet (on the kintone emulator, with the stand-in kSQL-Flow). Every scenario passes
// or fails as a declared known product defect of this product version that still
// reproduces; the run says which product ran. Where the real product cannot run, --product
// real is refused as blocked and this test fails with the reason: not run is never passed.
func TestAcceptanceSuiteOnRealProduct(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("acceptance run skipped in -short mode")
	}
	r, dir := realAcceptanceRun(t)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Regexp(t, `(?m)^product: @rex0220/ksql-flownet@1\.0\.0 \(pinned `, r.stdout)
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	var run struct {
		State   string `json:"state"`
		Product struct {
			Kind, Package, Version string
		} `json:"product"`
		Scenarios []struct{ ID, Status string } `json:"scenarios"`
	}
	require.NoError(t, json.Unmarshal(data, &run))
	assert.Equal(t, "complete", run.State)
	assert.Equal(t, "real", run.Product.Kind)
	assert.Equal(t, "@rex0220/ksql-flownet", run.Product.Package)
	assert.Equal(t, "1.0.0", run.Product.Version)
	assert.Len(t, run.Scenarios, manifestSize(t))
	for _, s := range run.Scenarios {
		if s.Status == "passed" {
			continue
		}
		var rec struct {
			KnownDefect *struct{ ID, Outcome string } `json:"known_defect"`
		}
		data, err := os.ReadFile(filepath.Join(dir, "scenarios", s.ID+".json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &rec))
		if rec.KnownDefect == nil || s.Status != "failed" || rec.KnownDefect.Outcome != "reproduced" {
			t.Errorf("scenario %s: %s on the real product, not a reproduced known product defect (%+v)", s.ID, s.Status, rec.KnownDefect)
		}
	}
	v := flowtest(t, nil, "archive", "verify", dir)
	assert.Equal(t, 0, v.code, v.stdout+v.stderr)
}

// The reference FlowNet kept honest (issue 41, item 5): the same scenarios on the real and
// on the reference FlowNet leave the same record history and FlowNet outputs once ids, times
// and scopes are normalised; every difference is explained in
// features/differential-known.yaml with its reason, and no explanation is stale.
func TestDifferentialReferenceAgainstRealProduct(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("acceptance runs skipped in -short mode")
	}
	_, ref := acceptanceRun(t)
	_, real := realAcceptanceRun(t)
	d := flowtest(t, nil, "archive", "diff", ref, real)
	assert.Equal(t, 0, d.code, "unexplained differences between the reference and the real FlowNet:\n%s%s", d.stdout, d.stderr)
	assert.Regexp(t, fmt.Sprintf(`%d scenarios compared: 0 unexplained differences, \d+ explained, 0 stale explanations`, manifestSize(t)), d.stdout)
}

func TestListShowsTheManifest(t *testing.T) {
	r := flowtest(t, nil, "list")
	require.Equal(t, 0, r.code, r.stderr)
	total := manifestSize(t)
	assert.Contains(t, r.stdout, fmt.Sprintf("%d scenarios (43 acceptance, %d extended)", total, total-43))
	assert.Regexp(t, `(?s)csv2-03-clikintone.*Extended series.*ext-`, r.stdout, "the extended series listed apart, after the 43")
	assert.Regexp(t, `(?m)^1\s+m5-serial-success\s+m5\s`, r.stdout)
	assert.Regexp(t, `(?m)^43\s+csv2-03-clikintone\s+csv2\s`, r.stdout)
	// needs replace the old platform column
	assert.Regexp(t, `(?m)^\s*5\s+m5-kill-unknown\s+m5\s+23\s+confirmer\s`, r.stdout)
	assert.Regexp(t, `(?m)^\s*1\s+m5-serial-success\s+m5\s+serial-success,job-log-correlation\s+-\s`, r.stdout)
	assert.NotContains(t, r.stdout, "PLATFORM")

	// A selection lists what it selects, numbered by run order.
	m := flowtest(t, nil, "list", "--tags", "@m6-02-unknown-isolation or @m5-resume")
	require.Equal(t, 0, m.code, m.stderr)
	assert.Contains(t, m.stdout, fmt.Sprintf("2 of %d scenarios selected", total))
	assert.Regexp(t, `(?m)^3\s+m5-resume\s`, m.stdout)
	assert.Regexp(t, `(?m)^7\s+m6-02-unknown-isolation\s`, m.stdout)
	assert.NotContains(t, m.stdout, "m5-serial-success")

	// Every scenario of the real manifest has a feature now; a manifest of its own shows
	// what list says of an entry without one and of a Windows-only entry.
	l := flowtest(t, nil, "list", "--features", needsFeatures(t))
	require.Equal(t, 0, l.code, l.stderr)
	assert.Contains(t, l.stdout, "no (not implemented)")
	assert.Regexp(t, `(?m)^\s*2\s+w\s+s\s+-\s+lease-wait,windows\s`, l.stdout)
}

// needsManifest has one implemented entry needing a confirmer, one Windows-only entry and
// one without a feature file.
const needsManifest = "schema_version: 1\nscenarios:\n" +
	"  - {id: a, series: s, acceptance: [\"1\"], needs: [confirmer]}\n" +
	"  - {id: w, series: s, needs: [lease-wait, windows]}\n" +
	"  - {id: n, series: s}\n"

func needsFeatures(t *testing.T) string {
	t.Helper()
	return featuresDir(t, needsManifest, map[string]string{
		"s/a.feature": "Feature: a\n  @a @s @acc-1\n  Scenario: a\n    Then exactly one run exists for the business key\n",
		"s/w.feature": "Feature: w\n  @w @s\n  Scenario: w\n    Then exactly one run exists for the business key\n",
	})
}

// The dry run shows every scenario's declared needs, a legend for those that would run, and
// reports an unmet platform need as the reason a scenario will not run.
func TestDryRunShowsNeeds(t *testing.T) {
	r := flowtest(t, nil, "run", "--dry-run", "--tags", "@m5")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Regexp(t, `m5-kill-unknown\s+m5\s+yes\s+m5/m5-kill-unknown.feature:\d+\s+confirmer\n`, r.stdout)
	assert.Regexp(t, `m5-serial-success\s+m5\s+yes\s+\S+\s+-\n`, r.stdout)
	assert.Regexp(t, `(?m)^\s+confirmer\s+m5-kill-unknown\s+a named operator confirms`, r.stdout)
	assert.Regexp(t, `PASS  kill-confirmer\s+--confirmed-by\s+sandbox: the scope's principal confirms`, r.stdout)
	assert.Regexp(t, `PASS  csv-io-dir\s+KSQL_FLOWNET_IO_DIR\s+no selected scenario needs csv-io`, r.stdout)
	if runtime.GOOS != "windows" {
		w := flowtest(t, nil, "run", "--dry-run", "--features", needsFeatures(t), "--tags", "@a or @w")
		assert.Regexp(t, `w\s+s\s+no\s+needs windows \(this is `+runtime.GOOS+`\)\s+lease-wait,windows\n`, w.stdout, w.stderr)
	}
}

func TestDryRunStartsNothing(t *testing.T) {
	out := t.TempDir()
	r := flowtest(t, nil, "run", "--dry-run", "--tags", "@m5 and not @m5-kill-unknown", "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "PASS  target")
	assert.Regexp(t, `m5-lock-conflict\s+m5\s+yes`, r.stdout)
	assert.Regexp(t, `m5-kill-unknown\s+m5\s+no\s+filtered by tag expression`, r.stdout)
	assert.Regexp(t, `m6-03-nonidem-no-auto-rerun\s+m6\s+no\s+filtered by tag expression`, r.stdout)
	assert.Contains(t, r.stdout, fmt.Sprintf("4 of %d scenarios would run", manifestSize(t)))
	entries, _ := os.ReadDir(out)
	assert.Empty(t, entries, "a dry run writes no archive")
}

// badNeedFeatures is a features dir whose manifest misspells a need on line 4.
func badNeedFeatures(t *testing.T) string {
	dir := t.TempDir()
	manifest := "schema_version: 1\nscenarios:\n  - {id: a, series: s}\n  - {id: b, series: s, needs: [confirmr]}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(manifest), 0o644))
	return dir
}

func TestCheckPrintsEveryCheck(t *testing.T) {
	r := flowtest(t, nil, "check", "--tags", "@m5")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "PASS  fixture-sql")
	assert.Contains(t, r.stdout, "preflight passed")

	r = flowtest(t, []string{"KSQL_FLOWNET_PROFILE= Prod "}, "check", "--tags", "@m5")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stdout, "FAIL  profile")
}

// --rerun selects the scenarios that failed in an earlier archive, read from its scenario
// files.
func TestRerunSelectsWhatFailed(t *testing.T) {
	prev := archiveWith(t, map[string]string{"m5-resume": "failed", "m5-mid-failure": "passed", "m6-02-unknown-isolation": "failed"})
	r := flowtest(t, nil, "run", "--dry-run", "--rerun", prev)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Regexp(t, `m5-resume\s+m5\s+yes`, r.stdout)
	assert.Regexp(t, `m6-02-unknown-isolation\s+m6\s+yes`, r.stdout)
	assert.Regexp(t, `m5-mid-failure\s+m5\s+no\s+filtered: did not fail in the archive being rerun`, r.stdout)
	assert.Contains(t, r.stdout, fmt.Sprintf("2 of %d scenarios would run", manifestSize(t)))

	r = flowtest(t, nil, "run", "--dry-run", "--rerun", t.TempDir())
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--rerun")
}

// manifestSize is how many scenarios the real manifest lists: the 43 acceptance scenarios and
// the extended series, which grows.
func manifestSize(t *testing.T) int {
	t.Helper()
	m, err := runner.LoadManifest(os.DirFS(filepath.Join(repoRoot(), "features")), "manifest.yaml")
	require.NoError(t, err)
	require.Equal(t, 43, m.Acceptance(), "the acceptance scenarios")
	return len(m.Scenarios)
}
