package runner

// Self-tests in the way godog tests itself: feature texts held in the test, run through the
// real runner with trivial steps.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/base/interrupt"
	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/runner/tagexpr"
)

// The test binary doubles as a long-running child process.
func TestMain(m *testing.M) {
	if os.Getenv("FLOWTEST_SELFTEST_CHILD") == "sleep" {
		time.Sleep(5 * time.Minute)
		os.Exit(0)
	}
	if os.Getenv("FLOWTEST_SELFTEST_CHILD") == "print-token" { // a writer that shows its token
		os.Stderr.WriteString("writer token " + os.Getenv("FLOWTEST_SELFTEST_TOKEN") + " refused\n")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

const selfManifest = `schema_version: 1
scenarios:
  - {id: alpha, series: s1, acceptance: ["1"], needs: [fault-proxy, confirmer]}
  - {id: beta, series: s1}
  - {id: gamma, series: s2}
  - {id: delta, series: s2, acceptance: ["7"]}
  - {id: win-only, series: s2, needs: [windows, lease-wait]}
  - {id: epsilon, series: s1, needs: [request-app, confirmer]}
`

// Files are named so that alphabetical order differs from the manifest order.
func selfFeatures(extra map[string]string) fstest.MapFS {
	fs := fstest.MapFS{
		"manifest.yaml": {Data: []byte(selfManifest)},
		"z/alpha.feature": {Data: []byte(`Feature: first
  @alpha @s1 @acc-1
  Scenario: alpha passes
    Given a step that passes
    Then another step that passes
`)},
		"a/delta.feature": {Data: []byte(`Feature: last
  @delta @s2 @acc-7
  Scenario: delta passes
    Given a step that passes
`)},
		"m/beta.feature": {Data: []byte(`Feature: second
  @beta @s1
  Scenario: beta fails
    Given a step that passes
    When a step that fails
    Then a step that passes
`)},
		"w/win.feature": {Data: []byte(`Feature: platform
  @win-only @s2
  Scenario: only on windows
    Given a step that passes
`)},
	}
	for k, v := range extra {
		fs[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return fs
}

type selfRun struct {
	items    []Item
	progress bytes.Buffer
	archive  *results.Archive
	res      Result
}

func trivialSteps(sc *godog.ScenarioContext, reg stepdef.Registry) {
	reg.Step(`^a step that passes$`, func() error { return nil })
	reg.Step(`^another step that passes$`, func(ctx context.Context) error { return nil })
	reg.Step(`^a step that fails$`, func() error { return errors.New("deliberate failure") })
}

func plan(t *testing.T, fsys fstest.MapFS, tags string) []Item {
	t.Helper()
	m, err := LoadManifest(fsys, "manifest.yaml")
	require.NoError(t, err)
	feats, err := Discover(fsys, ".", m)
	require.NoError(t, err)
	expr, err := tagexpr.Parse(tags)
	require.NoError(t, err)
	return Plan(m, feats, Selection{Expr: expr, GOOS: "linux"})
}

func execute(t *testing.T, fsys fstest.MapFS, items []Item, o Options) *selfRun {
	t.Helper()
	r := &selfRun{items: items}
	arch, err := results.Create(t.TempDir(), "self", time.Now(), redact.New(nil, nil))
	require.NoError(t, err)
	r.archive = arch
	o.Features = fsys
	o.Items = items
	if o.Initialize == nil {
		o.Initialize = trivialSteps
	}
	o.WorkRoot = t.TempDir()
	o.Archive = arch
	if o.Run == nil {
		o.Run = &results.Run{Target: "self-test"}
	}
	o.Progress = &r.progress
	r.res = Execute(context.Background(), o)
	return r
}

func statuses(r Result) map[string]string {
	out := map[string]string{}
	for _, s := range r.Scenarios {
		out[s.ID] = s.Status
	}
	return out
}

func startedOrder(progress string) []string {
	var ids []string
	for _, line := range strings.Split(progress, "\n") {
		if strings.HasPrefix(line, "START ") {
			ids = append(ids, strings.Fields(line)[1])
		}
	}
	return ids
}

func TestRunOrderFollowsManifestNotFileNames(t *testing.T) {
	fsys := selfFeatures(nil)
	r := execute(t, fsys, plan(t, fsys, ""), Options{})
	assert.Equal(t, []string{"alpha", "beta", "delta"}, startedOrder(r.progress.String()))
	assert.Equal(t, map[string]string{
		"alpha": results.StatusPassed, "beta": results.StatusFailed, "gamma": results.StatusNotRun,
		"delta": results.StatusPassed, "win-only": results.StatusNotRun, "epsilon": results.StatusNotRun,
	}, statuses(r.res))
	assert.Equal(t, ExitFailed, r.res.Code)
}

func TestNotImplementedIsNeverPassed(t *testing.T) {
	fsys := selfFeatures(nil)
	r := execute(t, fsys, plan(t, fsys, "@s2"), Options{})
	for _, s := range r.res.Scenarios {
		if s.ID == "gamma" {
			assert.Equal(t, results.StatusNotRun, s.Status)
			assert.Equal(t, ReasonNotImplemented, s.Reason)
		}
		if s.ID == "win-only" {
			assert.Equal(t, "needs windows (this is linux)", s.Reason)
		}
	}
	data, err := os.ReadFile(filepath.Join(r.archive.Dir(), "run.json"))
	require.NoError(t, err)
	var run struct {
		Scenarios []struct {
			ID             string `json:"id"`
			NotRunCategory string `json:"not_run_category"`
		} `json:"scenarios"`
	}
	require.NoError(t, json.Unmarshal(data, &run))
	for _, s := range run.Scenarios {
		if s.ID == "win-only" {
			assert.Equal(t, results.NotRunPlatform, s.NotRunCategory, "an unmet platform need is reported as another platform")
		}
	}
	// The archive holds a record for every manifest entry, run or not.
	for _, id := range []string{"alpha", "beta", "gamma", "delta", "win-only"} {
		_, err := os.Stat(filepath.Join(r.archive.Dir(), results.ScenarioDir, id+".json"))
		assert.NoError(t, err, "scenario file for %s", id)
	}
	assert.Equal(t, ExitPassed, r.res.Code, "only delta ran, and it passed")
}

func TestSelectionByTagExpression(t *testing.T) {
	fsys := selfFeatures(nil)
	cases := map[string][]string{
		"@s1":                        {"alpha", "beta"},
		"@s1 and not @beta":          {"alpha"},
		"@acc-7 or @acc-1":           {"alpha", "delta"},
		"not (@s1 or @delta)":        nil,
		"(@alpha or @delta) and @s2": {"delta"},
	}
	for expr, want := range cases {
		t.Run(expr, func(t *testing.T) {
			var got []string
			for _, it := range plan(t, fsys, expr) {
				if it.Run {
					got = append(got, it.ID)
				}
			}
			assert.Equal(t, want, got)
		})
	}
}

func TestDryRunOutputListsEveryEntryWithReason(t *testing.T) {
	fsys := selfFeatures(nil)
	var buf bytes.Buffer
	WritePlan(&buf, plan(t, fsys, "@s1 or @s2"))
	out := buf.String()
	assert.Contains(t, out, "z/alpha.feature:3")
	assert.Regexp(t, `gamma\s+s2\s+no\s+not implemented: no feature file`, out)
	assert.Regexp(t, `win-only\s+s2\s+no\s+needs windows \(this is linux\)\s+lease-wait,windows\n`, out)
	assert.Contains(t, out, "3 of 6 scenarios would run")
	// needs: a column on every row (canonical order, "-" for none) and a legend for what runs
	assert.Regexp(t, `alpha\s+s1\s+yes\s+z/alpha.feature:3\s+confirmer,fault-proxy\n`, out)
	assert.Regexp(t, `beta\s+s1\s+yes\s+m/beta.feature:3\s+-\n`, out)
	assert.Regexp(t, `epsilon\s+s1\s+no\s+not implemented: no feature file\s+confirmer,request-app\n`, out)
	assert.Regexp(t, `(?m)^Needs of the scenarios that would run:\n\s+confirmer\s+alpha\s+a named operator confirms`, out)
	assert.Regexp(t, `(?m)^\s+fault-proxy\s+alpha\s+kintone traffic through the fault proxy`, out)
	assert.NotRegexp(t, `(?m)^\s+(request-app|windows|lease-wait)\s`, out, "needs of scenarios that do not run are not in the legend")
	// order of rows is the manifest's
	assert.Less(t, strings.Index(out, "alpha"), strings.Index(out, "beta"))
	assert.Less(t, strings.Index(out, "gamma"), strings.Index(out, "delta"))
}

func TestStepDeadlineFailsStepAndRunContinues(t *testing.T) {
	fsys := selfFeatures(map[string]string{"b/hang.feature": `Feature: hang
  @beta @s1
  Scenario: a step that ignores its context
    Given a step that hangs
    Then a step that passes
`})
	delete(fsys, "m/beta.feature")
	release := make(chan struct{})
	defer close(release)
	items := plan(t, fsys, "@s1")
	r := execute(t, fsys, items, Options{
		StepTimeout: 200 * time.Millisecond,
		Initialize: func(sc *godog.ScenarioContext, reg stepdef.Registry) {
			trivialSteps(sc, reg)
			reg.Step(`^a step that hangs$`, func() { <-release })
		},
	})
	st := statuses(r.res)
	assert.Equal(t, results.StatusFailed, st["beta"])
	assert.Equal(t, results.StatusPassed, st["alpha"])
	for _, s := range r.res.Scenarios {
		if s.ID == "beta" {
			assert.Contains(t, s.Reason, "deadline")
			assert.Equal(t, "failed", s.Steps[0].Status)
			assert.Equal(t, "skipped", s.Steps[1].Status)
		}
	}
	assert.Equal(t, ExitFailed, r.res.Code)
}

// startSleeper starts a long-running child in the scenario (the test binary itself).
func startSleeper(ctx context.Context, name string) (*proc.Process, error) {
	st := scenario.From(ctx)
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return proc.Start(ctx, proc.Spec{
		Name: name, Path: self, Args: []string{"-test.run=^$"},
		Env: append(proc.PlatformEnv(), "FLOWTEST_SELFTEST_CHILD=sleep"),
		Dir: st.WorkDir, LogDir: st.WorkDir,
	})
}

// panicsAfter is an After hook that panics with msg after the scenario called name.
func panicsAfter(name, msg string) func(context.Context, *godog.Scenario, error) (context.Context, error) {
	return func(ctx context.Context, s *godog.Scenario, _ error) (context.Context, error) {
		if s.Name == name {
			panic(msg)
		}
		return ctx, nil
	}
}

func TestPanicInAfterHookIsReportedAndChildrenKilled(t *testing.T) {
	fsys := selfFeatures(map[string]string{"b/child.feature": `Feature: child
  @beta @s1
  Scenario: starts a child, then the After hook panics
    Given a child process is running
`})
	delete(fsys, "m/beta.feature")
	var child *proc.Process
	var mu sync.Mutex
	r := execute(t, fsys, plan(t, fsys, "@s1"), Options{
		Initialize: func(sc *godog.ScenarioContext, reg stepdef.Registry) {
			trivialSteps(sc, reg)
			reg.Step(`^a child process is running$`, func(ctx context.Context) error {
				p, err := startSleeper(ctx, "sleeper")
				mu.Lock()
				child = p
				mu.Unlock()
				return err
			})
			reg.After(panicsAfter("starts a child, then the After hook panics", "boom in After"))
		},
	})
	st := statuses(r.res)
	assert.Equal(t, results.StatusFailed, st["beta"])
	assert.Equal(t, results.StatusPassed, st["alpha"], "the runner survives and runs the next scenario")
	for _, s := range r.res.Scenarios {
		if s.ID == "beta" {
			assert.Contains(t, s.Reason, "panic in After hook: boom in After")
			assert.True(t, s.Cleanup.OK)
			assert.Contains(t, strings.Join(s.Cleanup.Actions, "\n"), "killed leftover process sleeper")
		}
	}
	mu.Lock()
	require.NotNil(t, child)
	_, exited := child.Exited()
	mu.Unlock()
	assert.True(t, exited, "the child was killed by the cleanup")
}

// A panic in an After hook registered directly on godog (bypassing the registry) escapes
// godog; the runner catches it, fails the scenario and still cleans up.
func TestPanicEscapingGodogIsCaught(t *testing.T) {
	fsys := selfFeatures(nil)
	r := execute(t, fsys, plan(t, fsys, "@alpha or @delta"), Options{
		Initialize: func(sc *godog.ScenarioContext, reg stepdef.Registry) {
			trivialSteps(sc, reg)
			sc.After(panicsAfter("alpha passes", "raw panic"))
		},
	})
	st := statuses(r.res)
	assert.Equal(t, results.StatusFailed, st["alpha"])
	assert.Equal(t, results.StatusPassed, st["delta"])
	for _, s := range r.res.Scenarios {
		if s.ID == "alpha" {
			assert.Contains(t, s.Reason, "raw panic")
		}
	}
}

func TestInterruptStopsScenarioKillsChildAndMarksArchive(t *testing.T) {
	fsys := selfFeatures(map[string]string{"b/child.feature": `Feature: child
  @beta @s1
  Scenario: waits on a child until interrupted
    Given a child process is running
    When the step waits for its context
`})
	delete(fsys, "m/beta.feature")
	sigs := make(chan os.Signal, 2)
	stop, now, release := interrupt.Watch(sigs)
	defer release()
	childUp := make(chan *proc.Process, 1)
	go func() {
		<-childUp
		sigs <- syscall.SIGINT
	}()
	var exitCode = -1
	r := execute(t, fsys, plan(t, fsys, ""), Options{
		Stop: stop, StopNow: now,
		Exit: func(code int) { exitCode = code },
		Initialize: func(sc *godog.ScenarioContext, reg stepdef.Registry) {
			trivialSteps(sc, reg)
			reg.Step(`^a child process is running$`, func(ctx context.Context) error {
				p, err := startSleeper(ctx, "sleeper")
				if err == nil {
					childUp <- p
				}
				return err
			})
			reg.Step(`^the step waits for its context$`, func(ctx context.Context) error {
				<-ctx.Done()
				return ctx.Err()
			})
		},
	})
	assert.Equal(t, ExitInterrupted, r.res.Code)
	assert.True(t, r.res.Interrupted)
	assert.Equal(t, -1, exitCode, "one interrupt does not force an exit")
	st := statuses(r.res)
	assert.Equal(t, results.StatusPassed, st["alpha"])
	assert.Equal(t, results.StatusInterrupted, st["beta"], "interrupted is its own status, not failed")
	assert.Equal(t, results.StatusNotRun, st["delta"])
	for _, s := range r.res.Scenarios {
		switch s.ID {
		case "beta":
			assert.Contains(t, s.Reason, "interrupted")
			assert.Contains(t, strings.Join(s.Cleanup.Actions, "\n"), "killed leftover process sleeper")
		case "delta":
			assert.Equal(t, ReasonInterrupted, s.Reason)
		}
	}
	data, err := os.ReadFile(filepath.Join(r.archive.Dir(), "run.json"))
	require.NoError(t, err)
	var run map[string]any
	require.NoError(t, json.Unmarshal(data, &run))
	assert.Equal(t, "interrupted", run["state"])
}

func TestManifestErrors(t *testing.T) {
	for name, text := range map[string]string{
		"duplicate id":   "schema_version: 1\nscenarios:\n  - {id: a, series: s}\n  - {id: a, series: s}\n",
		"bad id":         "schema_version: 1\nscenarios:\n  - {id: A B, series: s}\n",
		"unknown field":  "schema_version: 1\nscenarios:\n  - {id: a, series: s, colour: red}\n",
		"wrong version":  "schema_version: 2\nscenarios:\n  - {id: a, series: s}\n",
		"empty scenario": "schema_version: 1\nscenarios: []\n",
		"old platform":   "schema_version: 1\nscenarios:\n  - {id: a, series: s, platform: windows}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseManifest("features/manifest.yaml", []byte(text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "features/manifest.yaml")
		})
	}
}

// A need is declared once and read everywhere, so a misspelt one must stop everything: the
// error names the file, the line and the known needs.
func TestManifestRefusesUnknownNeed(t *testing.T) {
	known := "known: confirmer, request-app, csv-io, fault-proxy, lease-wait, cli-kintone, iconv, windows"
	for name, tc := range map[string]struct{ text, want string }{
		"unknown in flow list": {"schema_version: 1\nscenarios:\n  - {id: a, series: s}\n  - {id: b, series: s, needs: [confirmer, confirmr]}\n",
			`features/manifest.yaml:4: unknown need "confirmr" (` + known + ")"},
		"unknown in block list": {"schema_version: 1\nscenarios:\n  - id: a\n    series: s\n    needs:\n      - request-app\n      - platform-windows\n",
			`features/manifest.yaml:7: unknown need "platform-windows" (` + known + ")"},
		"listed twice": {"schema_version: 1\nscenarios:\n  - {id: a, series: s, needs: [csv-io, csv-io]}\n",
			`features/manifest.yaml:3: need "csv-io" listed twice`},
		"not a list": {"schema_version: 1\nscenarios:\n  - {id: a, series: s, needs: windows}\n",
			"features/manifest.yaml:3: needs must be a list"},
		"not a name": {"schema_version: 1\nscenarios:\n  - {id: a, series: s, needs: [{windows: true}]}\n",
			"features/manifest.yaml:3: a need is a name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseManifest("features/manifest.yaml", []byte(tc.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := LoadManifest(fstest.MapFS{"m.yaml": {Data: []byte("schema_version: 1\nscenarios:\n  - {id: a, series: s, needs: [gpu]}\n")}}, "m.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `m.yaml:3: unknown need "gpu"`)
}

func TestNeedsParseInCanonicalOrder(t *testing.T) {
	m, err := ParseManifest("m.yaml", []byte("schema_version: 1\nscenarios:\n  - {id: a, series: s, needs: [windows, lease-wait, confirmer]}\n  - {id: b, series: s, needs: []}\n  - {id: c, series: s}\n"))
	require.NoError(t, err)
	assert.Equal(t, Needs{NeedConfirmer, NeedLeaseWait, NeedWindows}, m.Scenarios[0].Needs)
	assert.True(t, m.Scenarios[0].Needs.Has(NeedWindows))
	assert.False(t, m.Scenarios[0].Needs.Has(NeedRequestApp))
	assert.Equal(t, "confirmer,lease-wait,windows", m.Scenarios[0].Needs.String())
	assert.Equal(t, "-", m.Scenarios[1].Needs.String())
	assert.Equal(t, "-", m.Scenarios[2].Needs.String())
	for _, n := range KnownNeeds() {
		assert.NotEmpty(t, n.About(), "every known need explains itself: %s", n)
	}
}

// The windows need decides whether a scenario can run here; no other need skips a scenario
// (preflight refuses instead).
func TestWindowsNeedDecidesPlatform(t *testing.T) {
	fsys := selfFeatures(nil)
	m, err := LoadManifest(fsys, "manifest.yaml")
	require.NoError(t, err)
	feats, err := Discover(fsys, ".", m)
	require.NoError(t, err)
	for goos, want := range map[string]string{"linux": "needs windows (this is linux)", "darwin": "needs windows (this is darwin)", "windows": ""} {
		for _, it := range Plan(m, feats, Selection{GOOS: goos}) {
			switch it.ID {
			case "win-only":
				assert.Equal(t, want, it.Reason, goos)
				assert.Equal(t, want == "", it.Run, goos)
			case "alpha":
				assert.True(t, it.Run, "confirmer and fault-proxy do not stop a scenario from being planned")
			}
		}
	}
}

func TestDiscoverRefusesScenarioWithoutManifestID(t *testing.T) {
	fsys := selfFeatures(map[string]string{"x/stray.feature": "Feature: stray\n  @s1\n  Scenario: no id\n    Given a step that passes\n"})
	m, err := LoadManifest(fsys, "manifest.yaml")
	require.NoError(t, err)
	_, err = Discover(fsys, ".", m)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "x/stray.feature:3")
	assert.Contains(t, err.Error(), "no tag naming a manifest id")
}

// The real manifest lists the 43 acceptance scenarios in the documented series order; only
// the extended series (ext) follow them.
func TestRealManifest(t *testing.T) {
	m, err := LoadManifest(os.DirFS("../../features"), "manifest.yaml")
	require.NoError(t, err)
	require.Equal(t, 43, m.Acceptance())
	assert.Equal(t, []string{"ext"}, m.Extended)
	count := map[string]int{}
	var order []string
	for _, e := range m.Scenarios {
		if e.Extended {
			continue
		}
		if count[e.Series] == 0 {
			order = append(order, e.Series)
		}
		count[e.Series]++
	}
	assert.Equal(t, []string{"m5", "m6", "m7", "m8", "p2-01", "p2-11", "p2-16", "csv1", "csv2"}, order)
	assert.Equal(t, map[string]int{"m5": 5, "m6": 6, "m7": 5, "m8": 3, "p2-01": 6, "p2-11": 5, "p2-16": 5, "csv1": 4, "csv2": 4}, count)
	ids := func(series string) []string {
		var out []string
		for _, e := range m.Scenarios {
			if e.Series == series {
				out = append(out, e.ID)
			}
		}
		return out
	}
	assert.Equal(t, []string{"p2-11-04-rejections", "p2-11-01-explicit", "p2-11-02-scheduled", "p2-11-03-duplicates", "p2-11-05-stale-regression"}, ids("p2-11"))
	assert.Equal(t, []string{"p2-16-01-cancel-before-claim", "p2-16-04-close", "p2-16-03-terminal-hold-release", "p2-16-05-close-rerun-race", "p2-16-02-cancel-claim-race"}, ids("p2-16"))
	assert.Equal(t, []string{"csv1-03-rejections", "csv1-01-import-run", "csv1-02-mutated-resume", "csv1-04-10k-measure"}, ids("csv1"))
	assert.Equal(t, []string{"csv2-04-failclosed", "csv2-01-export-run", "csv2-02-roundtrip", "csv2-03-clikintone"}, ids("csv2"))
	// The needs whose absence would skip a safety check (scenarios.md §3) or a platform rule,
	// among the acceptance scenarios (the extended series add their own).
	with := func(n Need) []string {
		var out []string
		for _, e := range m.Scenarios {
			if e.Needs.Has(n) && !e.Extended {
				out = append(out, e.ID)
			}
		}
		return out
	}
	assert.Equal(t, []string{"m5-kill-unknown", "m6-02-unknown-isolation", "m6-04-force-unlock-drill"}, with(NeedConfirmer))
	// m7-04 sends SIGTERM off Windows: no scenario of the manifest is Windows-only.
	assert.Empty(t, with(NeedWindows))
	assert.Equal(t, []string{"csv2-03-clikintone"}, with(NeedCLIKintone))
	for _, e := range m.Scenarios {
		if e.Extended {
			continue // an extended scenario declares what it uses (ext-01 closes through the poller)
		}
		request := strings.HasPrefix(e.Series, "p2-") || strings.HasPrefix(e.Series, "csv")
		assert.Equal(t, request, e.Needs.Has(NeedRequestApp), "%s: the request-app gate covers P2-01, P2-11, P2-16 and CSV", e.ID)
		assert.Equal(t, strings.HasPrefix(e.Series, "csv"), e.Needs.Has(NeedCSVIO), "%s: csv-io is the CSV series", e.ID)
	}
	feats, err := Discover(os.DirFS("../../features"), ".", m)
	require.NoError(t, err, "every feature file maps to exactly one manifest id")
	for id := range feats {
		_, ok := m.Entry(id)
		assert.True(t, ok, id)
	}
}
