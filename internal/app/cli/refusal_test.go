package cli

// Nothing green by accident: every input a user can get wrong is refused before
// anything runs. Each case runs the built flowtest binary and checks the exit code (2), the
// key words of the one-line message, that no archive was written, that no child process was
// started (the sandbox binary, the FlowNet CLI and kSQL-Flow are all a fake that leaves a mark
// when started) and that no request was sent (the live base URL is a server counting
// connections).

import (
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeChildPrefix names a link to the test binary that, when started, only leaves a mark
// beside itself and exits (see TestMain).
const fakeChildPrefix = "fake-child"

// fakeChildMain is called by TestMain: a fake child leaves <its dir>/child-started.
func fakeChildMain() bool {
	if !strings.HasPrefix(filepath.Base(os.Args[0]), fakeChildPrefix) {
		return false
	}
	exe, err := os.Executable()
	if err == nil {
		_ = os.WriteFile(filepath.Join(filepath.Dir(exe), "child-started"), []byte(strings.Join(os.Args, " ")), 0o644)
	}
	return true
}

// fakeChild links (or copies) the test binary as dir/fake-child, so that starting it leaves
// dir/child-started.
func fakeChild(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	dst := filepath.Join(dir, fakeChildPrefix+exe())
	if err := os.Link(self, dst); err != nil {
		data, err := os.ReadFile(self)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, data, 0o755))
	}
	return dst
}

// countingServer is a TLS server that counts every connection made to it.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no request may reach a tenant from a refused run", http.StatusTeapot)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &n
}

// featuresDir writes a features directory: manifest.yaml plus files (path -> content).
func featuresDir(t *testing.T, manifest string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(manifest), 0o644))
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return dir
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// archiveWith writes a finished archive whose scenario records have the given statuses (in
// id order): a whole one, since --rerun reads only archives that pass the integrity check.
func archiveWith(t *testing.T, statuses map[string]string) string {
	t.Helper()
	ids := slices.Sorted(maps.Keys(statuses))
	shard := make([]scenarioRow, len(ids))
	for i, id := range ids {
		shard[i] = scenarioRow{id, statuses[id], ""}
	}
	return archiveOf(t, shard)
}

const oneScenarioManifest = "schema_version: 1\nscenarios:\n  - {id: a, series: s, acceptance: [\"1\"]}\n  - {id: b, series: s}\n"

// aFeature is a valid feature for entry a of oneScenarioManifest, with extra step lines.
func aFeature(steps ...string) string {
	return "Feature: a\n  @a @s @acc-1\n  Scenario: a\n    Given the network fixture \"network-x.yaml\"\n" + strings.Join(steps, "")
}

func TestEveryWrongInputIsRefusedBeforeAnythingRuns(t *testing.T) {
	srv, requests := countingServer(t)
	aFile := writeFile(t, "plain.txt", "x")
	badEnv := writeFile(t, "bad.env", "KSQL_FLOWNET_PROFILE=e2e\nKSQL_SPIKE_APP_EXEC=\"12\nKSQL_SPIKE_APP_AUDIT=13\n")
	twiceEnv := writeFile(t, "twice.env", "KSQL_SPIKE_APP_EXEC=1\nKSQL_SPIKE_APP_EXEC=2\n")
	longLine := featuresDir(t, oneScenarioManifest, map[string]string{"x/a.feature": aFeature("# " + strings.Repeat("x", 70000) + "\n")})
	badDeny := writeFile(t, "deny.txt", "app:4261\nproduction app 12\n")
	goodNetwork := "schema_version: 1\nnetwork_id: x\nnodes:\n  - {id: n1, job_id: j, sql: ../jobs/j.sql}\n"
	goodSQL := "-- @ksql name: j\nSELECT 1;\n"

	cases := []struct {
		name string
		args []string
		env  []string
		live bool     // live target: no --sandbox-bin; FlowNet and kSQL-Flow are the fake
		want []string // key words of the refusal
	}{
		// selections
		{"unknown tag", []string{"run", "--tags", "@nonexistent"}, nil, false, []string{`--tags "@nonexistent"`, "no scenario carries @nonexistent", "closest:"}},
		{"misspelt tag", []string{"run", "--tags", "@m5-resum"}, nil, false, []string{"no scenario carries @m5-resum", "closest: @m5-resume"}},
		{"misspelt tag in an or", []string{"run", "--tags", "@m5 or @m6-01-resume-identiy"}, nil, false, []string{"no scenario carries @m6-01-resume-identiy", "@m6-01-resume-identity"}},
		{"empty selection", []string{"run", "--tags", "@m5 and @m6"}, nil, false, []string{`--tags "@m5 and @m6" selects no scenario`, "--allow-empty"}},
		{"empty selection, dry run", []string{"run", "--dry-run", "--tags", "@m5 and @m6"}, nil, false, []string{"selects no scenario"}},
		{"empty selection, check", []string{"check", "--tags", "@m5 and @m6"}, nil, false, []string{"selects no scenario"}},
		{"unknown tag, check", []string{"check", "--tags", "@nope"}, nil, false, []string{"no scenario carries @nope"}},
		{"malformed expression", []string{"run", "--tags", "@m5 and (@m6"}, nil, false, []string{`--tags "@m5 and (@m6"`, "column"}},
		{"trailing operator", []string{"run", "--tags", "@m5 or"}, nil, false, []string{"tag expression"}},
		{"tags twice", []string{"run", "--tags", "@m5", "--tags", "@m6"}, nil, false, []string{"--tags given 2 times", `"@m5", "@m6"`}},
		{"rerun with nothing failed", []string{"run", "--rerun", archiveWith(t, map[string]string{"m5-resume": "passed"})}, nil, false, []string{"--rerun", "no scenario of the manifest failed there"}},
		{"rerun of an unknown id", []string{"run", "--rerun", archiveWith(t, map[string]string{"m5-resume": "failed", "m5-renamed": "failed"})}, nil, false, []string{"m5-renamed", "not in the run-order manifest"}},
		{"rerun and tags select nothing", []string{"run", "--tags", "@m6", "--rerun", archiveWith(t, map[string]string{"m5-resume": "failed"})}, nil, false, []string{`--tags "@m6" with --rerun`, "selects no scenario"}},
		{"rerun of a folder that is no archive", []string{"run", "--rerun", t.TempDir()}, nil, false, []string{"--rerun"}},
		{"rerun of a missing folder", []string{"run", "--rerun", "/nonexistent/archive"}, nil, false, []string{`--rerun "/nonexistent/archive": not a directory`}},

		// flag values
		{"zero step timeout", []string{"run", "--step-timeout", "0"}, nil, false, []string{`--step-timeout "0": want a positive duration`}},
		{"api budget below one", []string{"run", "--api-budget", "0"}, nil, false, []string{"FLOWTEST_API_BUDGET", `"0" is not an integer of at least 1`}},
		{"api budget not a number", []string{"run"}, []string{"FLOWTEST_API_BUDGET=lots"}, false, []string{"FLOWTEST_API_BUDGET", `"lots" is not an integer`}},
		{"negative step timeout", []string{"run", "--step-timeout", "-5s"}, nil, false, []string{`--step-timeout "-5s"`}},
		{"negative sandbox read latency", []string{"run", "--sandbox-read-latency", "-1s"}, nil, false, []string{`--sandbox-read-latency "-1s": want 0`}},
		{"unparsable step timeout", []string{"run", "--step-timeout", "5 minutes"}, nil, false, []string{`invalid argument "5 minutes" for "--step-timeout" flag`}},
		{"zero concurrency", []string{"run", "--concurrency", "0"}, nil, false, []string{`--concurrency "0": want an integer of at least 1`}},
		{"word concurrency", []string{"run", "--concurrency", "two"}, nil, false, []string{`--concurrency "two"`}},
		{"zero repeat", []string{"run", "--repeat", "0"}, nil, false, []string{`--repeat "0": want an integer of at least 1`}},
		{"shard out of range", []string{"run", "--shard", "4/3"}, nil, false, []string{`--shard "4/3"`, "1 <= K <= N"}},
		{"shard not K/N", []string{"run", "--shard", "2"}, nil, false, []string{`--shard "2"`}},
		{"durations from a file", []string{"run", "--durations-from", aFile}, nil, false, []string{"--durations-from", "not an archive directory"}},
		{"durations from a missing archive", []string{"run", "--shard", "1/2", "--durations-from", "/nonexistent/archive"}, nil, false, []string{`--durations-from "/nonexistent/archive"`}},
		{"shard with nothing in it", []string{"run", "--tags", "@m5-resume", "--shard", "2/2"}, nil, false, []string{"--shard 2/2", "got no scenario"}},
		{"zero concurrency from the environment", []string{"run"}, []string{"FLOWTEST_CONCURRENCY=0"}, false, []string{"FLOWTEST_CONCURRENCY", `"0" is not an integer of at least 1`}},
		{"zero timeout scale", []string{"run", "--timeout-scale", "0"}, nil, false, []string{`--timeout-scale "0": want a positive decimal`}},
		{"unknown format", []string{"run", "--format", "bogus"}, nil, false, []string{`--format "bogus": unknown formatter "bogus"`, "junit"}},
		{"format file in a missing directory", []string{"run", "--format", "junit:/nonexistent/dir/out.xml"}, nil, false, []string{`--format "junit:/nonexistent/dir/out.xml"`, "does not exist"}},
		{"format comma list", []string{"run", "--format", "pretty,junit:x.xml"}, nil, false, []string{"one formatter per --format"}},
		{"format without a file", []string{"run", "--format", "pretty"}, nil, false, []string{`--format "pretty": give the formatter a file, e.g. pretty:out/pretty.txt`}},
		{"archive root under a file", []string{"run", "--out", filepath.Join(aFile, "results")}, nil, false, []string{"--out", "cannot be created", "is a file"}},
		{"archive root is a file", []string{"run", "--out", aFile}, nil, false, []string{"--out", "a file, not a directory"}},
		{"lock dir is a file", []string{"run", "--lock-dir", aFile}, nil, false, []string{"--lock-dir", "a file, not a directory"}},
		{"lock dir from the environment under a file", []string{"run", "--tags", "@m5-mid-failure"}, []string{"FLOWTEST_LOCK_DIR=" + filepath.Join(aFile, "locks")}, false, []string{"FLOWTEST_LOCK_DIR", "is a file"}},
		{"named env file missing", []string{"run", "--env-file", "/nonexistent/.env"}, nil, false, []string{`--env-file "/nonexistent/.env": no such file`}},
		{"named env file missing, archive verify", []string{"archive", "verify", "--env-file", "/nonexistent/.env", t.TempDir()}, nil, false, []string{`--env-file "/nonexistent/.env": no such file`}},
		{"deny list file missing", []string{"run", "--denylist-file", "/nonexistent/deny.txt"}, nil, false, []string{`--denylist-file "/nonexistent/deny.txt": no such file`}},
		{"features dir missing", []string{"run", "--features", "/nonexistent/features"}, nil, false, []string{`--features "/nonexistent/features": not a directory`}},
		{"features dir missing, list", []string{"list", "--features", "/nonexistent/features"}, nil, false, []string{`--features "/nonexistent/features"`}},
		{"sandbox binary missing", []string{"run", "--sandbox-bin", "/nonexistent/flowsandbox", "--tags", "@m5-mid-failure"}, nil, false, []string{`--sandbox-bin "/nonexistent/flowsandbox": no such file`}},
		{"unknown target", []string{"run", "--target", "prod"}, nil, false, []string{`--target "prod": want sandbox or live`}},
		{"empty profile", []string{"run", "--profile", ""}, nil, false, []string{`--profile "": empty`}},
		{"blank confirmer", []string{"run", "--confirmed-by", " "}, nil, false, []string{`--confirmed-by " ": empty`}},
		{"empty SUT commit", []string{"run", "--sut-commit", ""}, nil, false, []string{`--sut-commit "": empty`}},
		{"unexpected argument", []string{"run", "@m5"}, nil, false, []string{"unexpected arguments", "--tags"}},
		{"unknown flag", []string{"run", "--tag", "@m5"}, nil, false, []string{"flowtest run: unknown flag --tag (did you mean --tags?)"}},

		// flags that exclude each other
		{"sandbox binary with the live target", []string{"run", "--target", "live", "--sandbox-bin", aFile}, nil, true, []string{"--sandbox-bin", "the live target starts no sandbox"}},
		{"base URL with the sandbox", []string{"run", "--base-url", "https://e2e.example.cybozu.com"}, nil, false, []string{`--base-url "https://e2e.example.cybozu.com" is a live setting`}},
		{"FlowNet checkout with the sandbox", []string{"run", "--flownet-dir", t.TempDir()}, nil, false, []string{"--flownet-dir", "is a live setting"}},
		{"CA file with the sandbox", []string{"run", "--ca-file", aFile}, nil, false, []string{"--ca-file", "is a live setting"}},

		// files the runner reads
		{"malformed .env", []string{"run", "--env-file", badEnv}, nil, false, []string{badEnv + ":2:", "never ends"}},
		{".env setting a name twice", []string{"run", "--env-file", twiceEnv}, nil, false, []string{twiceEnv + ":2:", "KSQL_SPIKE_APP_EXEC is set twice"}},
		{"malformed deny list", []string{"run", "--denylist-file", badDeny}, nil, false, []string{badDeny + ":2:", "not kind:value"}},
		{"manifest YAML syntax", []string{"run", "--features", featuresDir(t, "schema_version: 1\nscenarios:\n  - {id: a, series: s\n", nil)}, nil, false, []string{"manifest.yaml:3: YAML:"}},
		{"manifest unknown key", []string{"run", "--features", featuresDir(t, "schema_version: 1\nscenarios:\n  - {id: a, series: s, acceptence: [\"1\"]}\n", nil)}, nil, false, []string{`manifest.yaml:3: unknown scenario key "acceptence"`}},
		{"manifest duplicate id", []string{"run", "--features", featuresDir(t, "schema_version: 1\nscenarios:\n  - {id: a, series: s}\n  - {id: a, series: s}\n", nil)}, nil, false, []string{"manifest.yaml:4: id a listed twice (first at line 3)"}},
		{"manifest unknown need", []string{"run", "--dry-run", "--features", badNeedFeatures(t)}, nil, false, []string{`manifest.yaml:4: unknown need "confirmr" (known: confirmer, request-app,`}},
		{"known defect of an unknown scenario", []string{"run", "--features", featuresDir(t, oneScenarioManifest, map[string]string{"x/a.feature": aFeature(),
			"known-defects.yaml": "schema_version: 1\ndefects:\n  - {id: KPD-1, package: p, version: 1.0.0, scenario: z, assertion: w, evidence: e.md, summary: s}\n"})}, nil, false, []string{`known-defects.yaml:3: KPD-1: scenario "z" is not in the run-order manifest`}},
		{"known defect without its evidence", []string{"run", "--features", featuresDir(t, oneScenarioManifest, map[string]string{"x/a.feature": aFeature(),
			"known-defects.yaml": "schema_version: 1\ndefects:\n  - {id: KPD-1, package: p, version: 1.0.0, scenario: a, assertion: w, evidence: docs/nowhere.md, summary: s}\n"})}, nil, false, []string{`known-defects.yaml:3: KPD-1: evidence "docs/nowhere.md": no such file in the repository`}},
		{"known defects with an unknown key", []string{"run", "--features", featuresDir(t, oneScenarioManifest, map[string]string{"x/a.feature": aFeature(),
			"known-defects.yaml": "schema_version: 1\ndefects: []\nentries: []\n"})}, nil, false, []string{`known-defects.yaml:3: unknown key "entries"`}},
		{"feature with an id not in the manifest", []string{"run", "--features", featuresDir(t, oneScenarioManifest, map[string]string{"x/c.feature": "Feature: c\n  @c @s\n  Scenario: c\n    Given x\n"})}, nil, false, []string{"x/c.feature:3:", "carries no tag naming a manifest id"}},
		{"feature that does not parse", []string{"run", "--features", featuresDir(t, oneScenarioManifest, map[string]string{"x/a.feature": aFeature("  Blah\n")})}, nil, false, []string{"x/a.feature:5:3:", "expected:"}},
		{"feature without its series tag", []string{"run", "--features", featuresDir(t, oneScenarioManifest, map[string]string{"x/a.feature": "Feature: a\n  @a @acc-1\n  Scenario: a\n    Given x\n"})}, nil, false, []string{"x/a.feature:3:", "lacks @s"}},
		{"feature with no scenario", []string{"run", "--features", featuresDir(t, oneScenarioManifest, map[string]string{"x/a.feature": "Feature: a\n"})}, nil, false, []string{"x/a.feature: no scenario"}},
		// Issue 42 item 10: a line over gherkin's 64 KiB panicked list, run --dry-run and run.
		{"feature line over 64 KiB, list", []string{"list", "--features", longLine}, nil, false, []string{"x/a.feature:5: line is 70002 bytes long"}},
		{"feature line over 64 KiB, dry run", []string{"run", "--dry-run", "--features", longLine}, nil, false, []string{"x/a.feature:5: line is 70002 bytes long"}},
		{"feature line over 64 KiB, run", []string{"run", "--features", longLine}, nil, false, []string{"x/a.feature:5: line is 70002 bytes long"}},
		{"malformed network fixture", []string{"run", "--features", featuresDir(t, oneScenarioManifest, map[string]string{
			"x/a.feature": aFeature(), "fixtures/networks/network-x.yaml": "schema_version: 1\nnetwork_id: x\nnodes:\n  - {id: n1, sql: ../jobs/j.sql}\n", "fixtures/jobs/j.sql": goodSQL,
		})}, nil, false, []string{"network-x.yaml:4:", `node "n1": missing job_id`}},
		{"malformed fixture SQL", []string{"run", "--features", featuresDir(t, oneScenarioManifest, map[string]string{
			"x/a.feature": aFeature(), "fixtures/networks/network-x.yaml": goodNetwork, "fixtures/jobs/j.sql": "-- @ksql name: j\n-- @ksql name: j\nSELECT 1;\n",
		})}, nil, false, []string{"j.sql:2:", "a second `-- @ksql name:` header"}},

		// live mode: refused by preflight before the first request
		{"live without configuration", []string{"run", "--target", "live", "--tags", "@m5-mid-failure"}, nil, true, []string{"KSQL_SPIKE_APP_EXEC"}},
		{"live kill scenario without confirmer", []string{"run", "--target", "live", "--tags", "@m5-kill-unknown"}, nil, true, []string{"named confirmer"}},
		{"production profile", []string{"run", "--tags", "@m5-mid-failure"}, []string{"KSQL_FLOWNET_PROFILE=prod"}, false, []string{"profile"}},
		{"unknown command", []string{"frobnicate"}, nil, false, []string{"unknown command"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			fake := fakeChild(t, work)
			out := filepath.Join(work, "results")
			require.NoError(t, os.Mkdir(out, 0o755))
			args := append([]string(nil), c.args...)
			if args[0] == "run" { // check takes neither --lock-dir nor --sandbox-bin: it locks and starts nothing
				if !has(args, "--out") {
					args = append(args, "--out", out)
				}
				if !has(args, "--lock-dir") && !hasPrefix(c.env, "FLOWTEST_LOCK_DIR=") {
					args = append(args, "--lock-dir", filepath.Join(work, "locks"))
				}
				if !c.live && !has(args, "--sandbox-bin") && !has(args, "--target") {
					args = append(args, "--sandbox-bin", fake)
				}
			}
			env := append([]string{
				"KSQL_SPIKE_BASE_URL=" + srv.URL, "FLOWTEST_FLOWNET_BIN=" + fake, "KSQL_FLOW_BIN=" + fake,
			}, c.env...)
			r := flowtest(t, env, args...)
			all := r.stdout + r.stderr
			assert.Equal(t, 2, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			for _, w := range c.want {
				assert.Contains(t, all, w)
			}
			assert.NotContains(t, all, "START ", "no scenario started")
			entries, _ := os.ReadDir(out)
			assert.Empty(t, entries, "a refused run writes no archive")
			_, err := os.Stat(filepath.Join(work, "child-started"))
			assert.True(t, os.IsNotExist(err), "no child process was started")
			assert.Zero(t, requests.Load(), "no request was sent")
		})
	}
}

func hasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func has(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// A run in which every selected scenario was not run is not green: it exits 3 and says so,
// with an archive that records why each was not run. --allow-empty accepts an empty
// selection (exit 0); a dry run predicts exit 3.
func TestNothingRanIsNotGreen(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the sandbox; skipped in -short mode")
	}
	// Two entries, neither implemented.
	features := featuresDir(t, oneScenarioManifest, nil)
	out := t.TempDir()
	r := flowtest(t, nil, "run", "--features", features, "--out", out, "--lock-dir", t.TempDir())
	require.Equal(t, 3, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "0 passed, 0 failed, 2 not run, of 2", "selected and not run: not implemented")
	assert.Contains(t, r.stdout, "nothing ran: every selected scenario was not run")
	run := readRun(t, archiveDir(t, r.stdout))
	assert.Equal(t, "complete", run.State)
	for _, s := range run.Scenarios {
		assert.Equal(t, "not-run", s.Status)
		assert.Equal(t, "not-implemented", s.NotRunCategory)
	}

	d := flowtest(t, nil, "run", "--dry-run", "--features", features, "--out", out)
	assert.Equal(t, 3, d.code, d.stdout+d.stderr)
	assert.Contains(t, d.stdout, "nothing would run")

	if runtime.GOOS != "windows" {
		w := flowtest(t, nil, "run", "--dry-run", "--features", needsFeatures(t), "--tags", "@w")
		assert.Equal(t, 3, w.code, "a scenario for another platform only: nothing would run")
	}

	e := flowtest(t, nil, "run", "--features", features, "--tags", "@a and @b", "--allow-empty", "--out", t.TempDir(), "--lock-dir", t.TempDir())
	assert.Equal(t, 0, e.code, "the user accepted an empty selection: stdout:\n%s\nstderr:\n%s", e.stdout, e.stderr)
	assert.Contains(t, e.stdout, "0 passed, 0 failed, 0 not run, 2 not selected, of 2", "the tag expression selected neither")
}

// The detectors of the refusal table can see what they look for: a run that does start the
// sandbox leaves the fake child's mark, and a live check that reads the request app reaches
// the counting server.
func TestRefusalDetectorsWork(t *testing.T) {
	work := t.TempDir()
	fake := fakeChild(t, work)
	r := flowtest(t, nil, "run", "--sandbox-bin", fake, "--tags", "@m5-mid-failure", "--out", t.TempDir(), "--lock-dir", t.TempDir())
	assert.NotEqual(t, 0, r.code)
	_, err := os.Stat(filepath.Join(work, "child-started"))
	assert.NoError(t, err, "the fake sandbox was started and left its mark:\n%s%s", r.stdout, r.stderr)

	srv, requests := countingServer(t)
	features := featuresDir(t, "schema_version: 1\nscenarios:\n  - {id: r, series: s, needs: [request-app]}\n",
		map[string]string{"x/r.feature": "Feature: r\n  @r @s\n  Scenario: r\n    Then exactly one run exists for the business key\n"})
	env := []string{"KSQL_SPIKE_BASE_URL=" + srv.URL, "KSQL_SPIKE_APP_EXEC=101", "KSQL_SPIKE_APP_AUDIT=102", "KSQL_E2E_LOG_APP_ID=103",
		"KSQL_E2E_REQUEST_APP_ID=104", "KSQL_SPIKE_TOKEN_EXEC=t1", "KSQL_SPIKE_TOKEN_EXEC_RO=t2", "KSQL_SPIKE_TOKEN_AUDIT=t3",
		"KSQL_SPIKE_TOKEN_AUDIT_RO=t4", "KSQL_E2E_TOKEN_LOGS=t5", "KSQL_E2E_TOKEN_LOGS_RO=t6", "KSQL_E2E_TOKEN_REQUESTS=t7", "KSQL_E2E_TOKEN_REQUESTS_RO=t8"}
	c := flowtest(t, env, "check", "--target", "live", "--features", features)
	assert.Equal(t, 2, c.code, c.stdout+c.stderr)
	// The setup probe of the tenant (livesetup.go) runs once the safety rules pass and is
	// refused here (the test server's certificate is not trusted).
	assert.Contains(t, c.stdout, "FAIL  tenant-tls")
	assert.NotZero(t, requests.Load(), "the tenant probe reached the counting server")
}
