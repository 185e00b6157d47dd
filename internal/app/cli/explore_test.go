package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/app/explorer"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
)

// explore's own flags and the run flags it takes stand anywhere after its scenario, and each
// lands in its own struct.
func TestExploreArgsSplitOwnFlagsFromRunFlags(t *testing.T) {
	var f exploreFlags
	p := parseRow(t, f.bind, "--schedules", "50", "p2-11-03-duplicates", "--seed=7", "--strategy", "pct", "--depth", "2", "--concurrency", "3", "--keep-workdirs")
	require.Equal(t, 0, p.code, p.stderr)
	require.NoError(t, f.exploreSpec.check(p.args))
	assert.Equal(t, "p2-11-03-duplicates", f.id)
	assert.Equal(t, 50, f.schedules)
	assert.Equal(t, uint64(7), f.seed)
	assert.Equal(t, "pct", f.strategy)
	assert.Equal(t, 2, f.depth)
	assert.Equal(t, "3", *f.run.config["concurrency"])
	assert.True(t, f.run.keepWorkDirs)
	assert.Equal(t, 1, f.run.repeat, "a run flag explore does not take keeps its default")

	var g exploreFlags
	require.Equal(t, 0, parseRow(t, g.bind, "x", "--time", "2m").code)
	require.NoError(t, g.exploreSpec.check([]string{"x"}))
	assert.Equal(t, 2*time.Minute, g.budget)
	assert.Zero(t, g.schedules)
	var h exploreFlags
	h.bind(flag.NewFlagSet("explore", flag.ContinueOnError))
	require.NoError(t, h.exploreSpec.check([]string{"x"}))
	assert.Equal(t, 50, h.schedules, "the default budget")
}

func TestExploreArgsRefusals(t *testing.T) {
	for want, args := range map[string][]string{
		"name one scenario":              {"--schedules", "3"},
		"not both":                       {"x", "--schedules", "3", "--time", "1m"},
		"unknown strategy":               {"x", "--strategy", "chaos"},
		"flag needs an argument: --seed": {"x", "--seed"},
		`--schedules: want a positive integer such as 3, got "0"`: {"x", "--schedules", "0"},
		`--bound: want 0 or more, such as 2, got "-1"`:            {"x", "--strategy", "dfs", "--bound", "-1"},
		`--shrink-runs: want 0 or more, such as 2, got "-1"`:      {"x", "--shrink-runs", "-1"},
		`--depth: want a positive integer such as 3, got "-2"`:    {"x", "--strategy", "pct", "--depth", "-2"},
		`--time: want a positive duration such as 10m, got "5"`:   {"x", "--time", "5"},
		`--seed: want a non-negative integer such as 42, got "x"`: {"x", "--seed", "x"},
		"replay file": {"x", "--replay", "/nonexistent/1.json"},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, 2, Main(append([]string{"explore"}, args...), nil, &out, &errb, nil), "%v", args)
		assert.Contains(t, errb.String(), want, "%v", args)
	}
}

// A scenario whose entry redirects its exploration (explore: {via, reason}) is explored
// through its sibling: the redirect is read from the manifest --features names.
func TestExploreRedirectFromTheManifest(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte("schema_version: 1\nscenarios:\n"+
		"  - {id: forced, series: s, explore: {via: free, reason: its barriers force one order}}\n"+
		"  - {id: free, series: s, explore: {processes: [resume, archive]}}\n"), 0o644))
	via := exploreRedirect("forced", dir)
	require.NotNil(t, via)
	assert.Equal(t, explorer.Redirect{From: "forced", To: "free", Reason: "its barriers force one order"}, *via)
	assert.Nil(t, exploreRedirect("free", dir), "an explorable scenario is explored itself")
	assert.Nil(t, exploreRedirect("unknown", dir), "an unknown id is the run path's to refuse")

	// The real manifest: p2-16-05 goes through ext-06.
	via = exploreRedirect("p2-16-05-close-rerun-race", filepath.Join(repoRoot(), "features"))
	require.NotNil(t, via)
	assert.Equal(t, "ext-06-close-resume-race", via.To)
}

// An exploration on the sandbox writes its report, README and page; a schedule's whole
// order, given back as a replay file, releases the same writes in the same order: a
// schedule is named by signatures, never by ids or arrival times. The exploration runs on
// the default product, the real FlowNet (make tools installs it), the replay on the
// reference, as TestExploreSameSeedSameOrders does: explore runs on both.
func TestExploreOnTheSandboxAndTheReplayOfASchedule(t *testing.T) {
	t.Parallel() // an end-to-end run that mostly waits
	if testing.Short() {
		t.Skip("explore run skipped in -short mode")
	}
	read := func(out string) explorer.Report { return readExploreReport(t, out) }
	out := t.TempDir()
	r := flowtest(t, nil, "explore", "p2-11-03-duplicates", "--schedules", "2", "--seed", "1", "--out", out)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	rep := read(out)
	assert.Contains(t, r.stdout, "\nproduct: @rex0220/ksql-flownet@1.0.0 (pinned ")
	assert.True(t, strings.HasPrefix(rep.Product, "@rex0220/ksql-flownet@1.0.0 "), "the report names the product: %q", rep.Product)
	require.Equal(t, 2, rep.SchedulesRun)
	assert.Equal(t, 2, rep.Passed, "the correct sandbox passes every schedule")
	total := 0
	for _, n := range rep.Branches {
		total += n
	}
	assert.Equal(t, 2, total, "each schedule names its outcome branch: %v", rep.Branches)
	assert.Contains(t, r.stdout, "archive verify: no secret or raw app id")

	// The replay on the reference: the real poller's claim heartbeats are timer-driven, so
	// how many a schedule held depends on how long it held them, and a replay of a real
	// schedule may wait for one that never comes (seen on the loaded machine). The
	// reference's writes are each caused by the one before.
	out = t.TempDir()
	r = flowtest(t, nil, "explore", "p2-11-03-duplicates", "--product", "reference", "--schedules", "1", "--seed", "1", "--out", out)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	rep = read(out)
	require.Len(t, rep.Schedules, 1)
	first := rep.Schedules[0]
	replay := filepath.Join(t.TempDir(), "explore.json")
	data, err := json.Marshal(explorer.ReplayFile{Scenario: "p2-11-03-duplicates", Replay: first.Order})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(replay, data, 0o644))
	out = t.TempDir()
	r = flowtest(t, nil, "explore", "p2-11-03-duplicates", "--product", "reference", "--replay", replay, "--out", out)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	again := read(out)
	require.Len(t, again.Schedules, 1)
	assert.Equal(t, schedule.Order(first.Order), schedule.Order(again.Schedules[0].Order), "the replay released the schedule's writes in its order")
	assert.Equal(t, first.Branch, again.Schedules[0].Branch)
	assert.Zero(t, again.Schedules[0].Forced, "every write the replay named came")
}

// readExploreReport is the explore.json of the one exploration archived under out, which
// also holds its README and page.
func readExploreReport(t *testing.T, out string) explorer.Report {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "*", "*", "explore.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	for _, f := range []string{"README.md", "index.html"} {
		assert.FileExists(t, filepath.Join(filepath.Dir(files[0]), f))
	}
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var rep explorer.Report
	require.NoError(t, json.Unmarshal(data, &rep))
	return rep
}

// The same seed explores the same schedules on real processes: two explorations of
// p2-11-03 with seed 7 release, schedule by schedule, the same writes in the same order
// (the random strategy's draws are a hash of seed, schedule and signature; the scheduler
// releases nothing while a process it expects is still busy). Another seed may explore
// other orders — or, by chance, the same ones: only that it runs is checked.
func TestExploreSameSeedSameOrders(t *testing.T) {
	t.Parallel() // an end-to-end run that mostly waits
	if testing.Short() {
		t.Skip("explore run skipped in -short mode")
	}
	// The test runs beside the rest of the package's: a quiescence window stretched by the
	// scale keeps a process's pause on the loaded machine from reading as quiet.
	scale := "2"
	orders := func(seed string) []string {
		t.Helper()
		out := t.TempDir()
		r := flowtest(t, []string{"FLOWTEST_TIMEOUT_SCALE=" + scale}, "explore", "p2-11-03-duplicates", "--product", "reference", "--schedules", "4", "--seed", seed, "--out", out)
		require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		rep := readExploreReport(t, out)
		assert.True(t, strings.HasPrefix(rep.Product, "reference FlowNet"), "the report names the product: %q", rep.Product)
		require.Len(t, rep.Schedules, 4)
		slices.SortFunc(rep.Schedules, func(a, b explorer.ScheduleRun) int { return a.N - b.N })
		var got []string
		for _, s := range rep.Schedules {
			require.NotEmpty(t, s.Order, "schedule %d released no write", s.N)
			got = append(got, schedule.Order(s.Order))
		}
		return got
	}
	first := orders("7")
	again := orders("7")
	for i := range first {
		assert.Equal(t, first[i], again[i], "schedule %d of seed 7 released another order the second time", i)
	}
	other := orders("8")
	same := 0
	for i := range other {
		if other[i] == first[i] {
			same++
		}
	}
	t.Logf("seed 8: %d of %d schedules in the same order as seed 7's", same, len(other))
}

// A scenario the manifest does not declare explorable is refused, and the refusal says so.
func TestExploreRefusesAScenarioNotDeclaredExplorable(t *testing.T) {
	r := flowtest(t, nil, "explore", "ext-04-run-insert-loser", "--schedules", "1", "--out", t.TempDir())
	assert.Equal(t, 2, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout+r.stderr, "ext-04-run-insert-loser is not declared explorable")
}
